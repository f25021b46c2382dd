// The schema corpus of the vendor suite as JSON literals.
#include "src/client/vendor_corpus.h"

namespace k3::client {
namespace {

using nlohmann::json;

json Function(const char* name, const char* description, const char* parameters) {
  return {
      {"type", "function"},
      {"function", {{"name", name}, {"description", description}, {"parameters", json::parse(parameters)}}}};
}

}  // namespace

const std::vector<ToolSchemaCase>& ToolSchemaCorpus() {
  static const std::vector<ToolSchemaCase> corpus = {
      {"get_weather", "What is the weather in Paris, in celsius?",
       Function("get_weather", "Get the current weather in a city.", R"({
         "type": "object",
         "properties": {
           "city": {"type": "string", "description": "City name, e.g. Paris"},
           "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
         },
         "required": ["city", "unit"],
         "additionalProperties": false})")},
      {"create_event", "Put a meeting called Review on 2026-03-02 with ana@example.com in my calendar.",
       Function("create_event", "Create a calendar event.", R"({
         "type": "object",
         "properties": {
           "title": {"type": "string", "minLength": 1, "maxLength": 40},
           "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
           "attendees": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}
         },
         "required": ["title", "date", "attendees"],
         "additionalProperties": false})")},
      {"set_thermostat", "Set the living room thermostat to 21.5 degrees in heat mode for 3 hours.",
       Function("set_thermostat", "Set a thermostat.", R"({
         "type": "object",
         "properties": {
           "temperature": {"type": "number", "minimum": 5, "maximum": 30},
           "mode": {"type": "string", "enum": ["heat", "cool", "off"]},
           "hold_hours": {"type": "integer", "minimum": 0, "maximum": 24}
         },
         "required": ["temperature", "mode", "hold_hours"],
         "additionalProperties": false})")},
      {"search_files", "Find the five newest markdown files about tokenizers.",
       Function("search_files", "Search files by text.", R"({
         "type": "object",
         "properties": {
           "query": {"type": "string"},
           "filters": {
             "type": "object",
             "properties": {
               "extension": {"type": "string", "enum": ["md", "txt", "cc"]},
               "max_results": {"type": "integer", "minimum": 1, "maximum": 50}
             },
             "required": ["extension"],
             "additionalProperties": false
           }
         },
         "required": ["query", "filters"],
         "additionalProperties": false})")},
      {"send_message", "Tell the ops channel, urgently, that the deploy is done.",
       Function("send_message", "Send a chat message.", R"({
         "type": "object",
         "properties": {
           "channel": {"type": "string", "enum": ["ops", "dev", "general"]},
           "text": {"type": "string"},
           "urgent": {"type": "boolean"},
           "thread": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}
         },
         "required": ["channel", "text", "urgent"],
         "additionalProperties": false})")},
  };
  return corpus;
}

const json& TimeTool() {
  static const json tool = Function("get_time", "Get the current time in a time zone.", R"({
    "type": "object",
    "properties": {"timezone": {"type": "string", "description": "IANA name, e.g. Europe/Paris"}},
    "required": ["timezone"],
    "additionalProperties": false})");
  return tool;
}

const json& ResponseFormatSchema() {
  static const json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "city": {"type": "string"},
      "population_millions": {"type": "integer", "minimum": 0},
      "continent": {"type": "string", "enum": ["Europe", "Asia", "Africa", "America", "Oceania"]}
    },
    "required": ["city", "population_millions", "continent"],
    "additionalProperties": false})");
  return schema;
}

}  // namespace k3::client
