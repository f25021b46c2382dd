#!/usr/bin/env python3
"""Writes the tokenizer training corpus (data/tokenizer-corpus/*.txt) deterministically.

Everything here was written for k3stack: word lists, sentence templates, code and markup skeletons.
A seeded PRNG combines them into a few hundred KB of mixed text (English prose, code, JSON, CJK, emoji,
combining marks, digits, whitespace runs, XTML-like markup), so a byte-level BPE trained on it sees
every script and pattern the K3 pre-tokeniser distinguishes. Run: python3 generate.py (same output
every time; the .txt files are committed and compiled into k3_tokenizer).
"""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(20261202)

NOUNS = """model server token request engine cache layer expert weight tensor queue thread kernel
river mountain city garden library window market harbor bridge forest village teacher student
doctor farmer engineer painter writer sailor pilot musician planet ocean desert island valley
computer network message answer question problem solution number letter story chapter page
morning evening winter summer spring autumn journey history science language picture machine
battery signal protocol channel budget report schedule meeting contract customer product""".split()
VERBS = """builds reads writes sends receives loads stores checks measures compares explains describes
opens closes starts stops carries follows guides shares splits merges counts holds returns
improves reduces watches finds keeps moves turns learns teaches""".split()
ADJS = """small large quiet bright dark careful quick slow ancient modern simple complex green blue
red golden silver heavy light warm cold early late strong gentle busy empty full honest
strange familiar distant narrow wide steady fragile""".split()
ADVS = """quickly slowly carefully quietly rarely often always never suddenly gently clearly""".split()
NAMES = """Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Oscar Peggy Trent Victor
Walter Yuki Chen Priya Omar Sofia Lukas Amara Mateo Ingrid Kwame""".split()
PLACES = """Paris Tokyo Lagos Lima Oslo Cairo Seoul Sydney Toronto Mumbai Berlin Nairobi Quito
Reykjavik Hanoi Madrid Beijing Istanbul""".split()
CONTRACTIONS = ["it's", "don't", "we're", "they've", "I'm", "you'll", "she'd", "IT'S", "Don'T",
                "can't", "won't", "isn't", "we'll", "he's", "you're", "I'd", "they'd"]


def sentence():
    kind = rng.randrange(6)
    if kind == 0:
        return "The %s %s %s the %s %s." % (rng.choice(ADJS), rng.choice(NOUNS), rng.choice(VERBS),
                                            rng.choice(ADJS), rng.choice(NOUNS))
    if kind == 1:
        return "%s %s %s a %s in %s, and %s %s." % (
            rng.choice(NAMES), rng.choice(ADVS), rng.choice(VERBS), rng.choice(NOUNS),
            rng.choice(PLACES), rng.choice(CONTRACTIONS), rng.choice(["fine", "true", "late", "over", "ours"]))
    if kind == 2:
        return "Why does the %s %s %s the %s? Because %s %s." % (
            rng.choice(NOUNS), rng.choice(ADVS), rng.choice(VERBS).rstrip("s"), rng.choice(NOUNS),
            rng.choice(CONTRACTIONS), rng.choice(ADJS))
    if kind == 3:
        return "In %d, %s counted %d %ss near %s (about %d.%d%% of the total)." % (
            rng.randrange(1800, 2030), rng.choice(NAMES), rng.randrange(2, 100000), rng.choice(NOUNS),
            rng.choice(PLACES), rng.randrange(0, 100), rng.randrange(0, 10))
    if kind == 4:
        return "\"%s,\" said %s; \"the %s is %s, isn't it?\"" % (
            rng.choice(["Yes", "No", "Perhaps", "Listen", "Look"]), rng.choice(NAMES), rng.choice(NOUNS),
            rng.choice(ADJS))
    return "%s: %s %s -- %s %s %s!" % (rng.choice(["Note", "Warning", "Tip", "TODO", "FYI"]),
                                      rng.choice(ADJS).upper(), rng.choice(NOUNS), rng.choice(NAMES),
                                      rng.choice(VERBS), rng.choice(NOUNS))


def prose(paragraphs):
    out = []
    for _ in range(paragraphs):
        out.append(" ".join(sentence() for _ in range(rng.randrange(3, 8))))
    return "\n\n".join(out) + "\n"


IDENTS = ["count", "total", "buffer", "index", "result", "value", "tokens", "offset", "length",
          "request", "response", "config", "layer", "weights", "scale", "state", "cache_entry",
          "numHeads", "maxTokens", "is_ready", "userName", "kvBlocks", "expert_ids"]
TYPES = ["int", "size_t", "float", "double", "uint32_t", "std::string", "bool", "int64_t"]


def cpp_function():
    name = rng.choice(["Compute", "Load", "Parse", "Merge", "Split", "Render", "Encode"]) + \
        rng.choice(["Tokens", "Layer", "Request", "Weights", "Batch", "Header", "Cache"])
    args = ", ".join("%s %s" % (rng.choice(TYPES), rng.choice(IDENTS)) for _ in range(rng.randrange(1, 4)))
    body = []
    for _ in range(rng.randrange(2, 7)):
        a, b = rng.choice(IDENTS), rng.choice(IDENTS)
        body.append(rng.choice([
            "  %s += %s * %d;" % (a, b, rng.randrange(1, 64)),
            "  if (%s >= %s) return %s;" % (a, b, rng.choice(["false", "0", "{}", "std::nullopt"])),
            "  for (size_t i = 0; i < %s.size(); ++i) %s[i] = %s[i] >> %d;" % (a, a, b, rng.randrange(1, 8)),
            "  auto %s = std::make_unique<%s>(%s);" % (a, rng.choice(["Engine", "Cache", "Layer"]), b),
            "  // %s" % sentence(),
            "  std::printf(\"%%s: %%d\\n\", %s.c_str(), %s);" % (a, b),
        ]))
    return "%s %s(%s) {\n%s\n}\n" % (rng.choice(TYPES + ["void", "Status"]), name, args, "\n".join(body))


def python_function():
    name = rng.choice(["load", "parse", "merge", "split", "render", "encode"]) + "_" + rng.choice(IDENTS)
    lines = ["def %s(%s):" % (name, ", ".join(rng.sample(IDENTS, rng.randrange(1, 4))))]
    lines.append('    """%s"""' % sentence())
    for _ in range(rng.randrange(2, 6)):
        a, b = rng.choice(IDENTS), rng.choice(IDENTS)
        lines.append(rng.choice([
            "    %s = [x ** 2 for x in range(%d) if x %% %d == 0]" % (a, rng.randrange(5, 500), rng.randrange(2, 9)),
            "    if not %s:\n        raise ValueError(f\"bad {%s!r}\")" % (a, b),
            "    %s = {\"%s\": %s, 'n': %d}" % (a, b, b, rng.randrange(0, 10000)),
            "    with open(%s, 'rb') as f:\n        %s = f.read()" % (a, b),
            "    return %s  # %s" % (a, rng.choice(NOUNS)),
        ]))
    return "\n".join(lines) + "\n"


def js_function():
    a, b = rng.choice(IDENTS), rng.choice(IDENTS)
    return ("export async function %s(%s) {\n  const %s = await fetch(`/v1/%s?id=${%s}`);\n"
            "  if (!%s.ok) throw new Error('status ' + %s.status);\n  return %s.json().then((x) => x.%s ?? null);\n}\n") % (
        rng.choice(["get", "post", "list"]) + rng.choice(["Models", "Tokens", "Items"]), a, b,
        rng.choice(NOUNS), a, b, b, b, rng.choice(IDENTS))


def rust_function():
    return ("fn %s(input: &[u8]) -> Result<Vec<u32>, Error> {\n    let mut out = Vec::with_capacity(input.len());\n"
            "    for (i, &b) in input.iter().enumerate() {\n        out.push(u32::from(b) << %d | i as u32);\n    }\n"
            "    Ok(out)\n}\n") % (rng.choice(IDENTS).lower(), rng.randrange(1, 24))


def code(n):
    parts = []
    for _ in range(n):
        parts.append(rng.choice([cpp_function, python_function, js_function, rust_function])())
    return "\n".join(parts)


def json_blob():
    obj = {
        "id": "req-%08x" % rng.randrange(1 << 32),
        "model": rng.choice(["kimi-k3", "tiny-k3", "mini-k3"]),
        "created": rng.randrange(1700000000, 1800000000),
        "temperature": round(rng.random() * 2, 3),
        "messages": [{"role": rng.choice(["user", "assistant", "system", "tool"]), "content": sentence()}
                     for _ in range(rng.randrange(1, 4))],
        "tools": [{"type": "function", "function": {"name": "get_" + rng.choice(IDENTS),
                   "parameters": {"type": "object", "properties": {rng.choice(IDENTS): {"type": rng.choice(
                       ["string", "number", "boolean", "array"])}}, "required": []}}}],
        "stream": rng.random() < 0.5,
        "city": rng.choice(PLACES + ["東京", "北京", "서울", "Zürich", "São Paulo", "Kraków"]),
    }
    indent = rng.choice([None, 2, 4])
    return json.dumps(obj, ensure_ascii=rng.random() < 0.3, indent=indent, sort_keys=rng.random() < 0.5) + "\n"


CHINESE = ["今天天气很好，我们去公园散步吧。", "模型在中央处理器上运行，速度取决于内存带宽。",
           "请把这个文件翻译成英文，并检查一下数字是否正确。", "长江是中国最长的河流，全长约六千三百公里。",
           "他说：“明天早上八点开会，不要迟到。”", "这个服务器每秒可以处理两千个请求。",
           "学习一门新的语言需要耐心和时间。", "北京、上海和广州都是很大的城市。",
           "我们的团队正在编写一个新的推理引擎。", "小明喜欢读书，也喜欢在周末画画。",
           "春天来了，花开了，鸟儿在树上唱歌。", "请注意：本次更新修复了三个已知问题。"]
JAPANESE = ["今日はとても良い天気ですね。", "東京駅から新幹線で大阪へ行きます。",
            "このモデルはトークンを一つずつ生成します。", "カタカナとひらがなと漢字を混ぜて書きます。",
            "ありがとうございます！また明日。", "コンピューターのメモリが足りません。"]
KOREAN = ["안녕하세요, 만나서 반갑습니다.", "서울은 한국의 수도입니다.", "오늘 회의는 세 시에 시작합니다.",
          "이 모델은 중앙 처리 장치에서 실행됩니다.", "한글은 세종대왕이 만들었습니다."]


def cjk(n):
    out = []
    for _ in range(n):
        line = "".join(rng.choice(rng.choice([CHINESE, CHINESE, JAPANESE, KOREAN])) for _ in range(rng.randrange(1, 5)))
        if rng.random() < 0.4:
            line += " (%s %d)" % (rng.choice(NOUNS), rng.randrange(1, 999))
        out.append(line)
    return "\n".join(out) + "\n"


EMOJI = ["😀", "😂", "🥲", "😍", "🤖", "🚀", "🔥", "✨", "👍", "👍🏽", "👋🏿", "❤️", "🇯🇵", "🇫🇷", "🇧🇷",
         "👨‍👩‍👧‍👦", "🧑‍💻", "🏳️‍🌈", "☕", "🌍", "🎉", "✅", "❌", "⚠️", "📦", "🐍", "🦀", "1️⃣", "#️⃣"]


def emoji_lines(n):
    out = []
    for _ in range(n):
        words = []
        for _ in range(rng.randrange(3, 10)):
            r = rng.random()
            if r < 0.35:
                words.append("".join(rng.choice(EMOJI) for _ in range(rng.randrange(1, 4))))
            elif r < 0.5:
                words.append(rng.choice(NOUNS) + rng.choice(EMOJI))
            else:
                words.append(rng.choice(NOUNS + ADJS + CONTRACTIONS))
        out.append(" ".join(words))
    return "\n".join(out) + "\n"


COMBINING_WORDS = ["café", "cafe\u0301", "naïve", "nai\u0308ve", "Ångström", "A\u030angstro\u0308m",
                   "Tiếng Việt", "Nguyễn", "phở", "đường", "résumé", "jalapeño", "Øresund", "Straße",
                   "ǅemal", "ǈubljana", "z\u0327\u0301", "e\u0300\u0301\u0302\u0303", "Ελληνικά",
                   "Русский язык", "Українська", "ქართული", "Հայերեն", "עִבְרִית", "العربية",
                   "مَرْحَبًا", "हिन्दी", "नमस्ते", "தமிழ்", "ภาษาไทย", "สวัสดีครับ", "ລາວ", "ខ្មែរ",
                   "ᠮᠣᠩᠭᠣᠯ", "ᚠᚢᚦᚨᚱᚲ", "ʻOkina", "Ꭰ Ꭱ Ꭲ", "ﬁne ﬂow", "ＡＢＣ１２３", "ｶﾀｶﾅ", "Ⅻ ⅻ ½ ¾ ²³"]


def combining(n):
    out = []
    for _ in range(n):
        out.append(" ".join(rng.choice(COMBINING_WORDS + NOUNS) for _ in range(rng.randrange(3, 9))) +
                   rng.choice([".", "!", "?", "", ";", "…", "。"]))
    return "\n".join(out) + "\n"


def digits(n):
    out = []
    for _ in range(n):
        out.append(rng.choice([
            "%d-%02d-%02dT%02d:%02d:%02dZ" % (rng.randrange(1990, 2040), rng.randrange(1, 13), rng.randrange(1, 29),
                                           rng.randrange(24), rng.randrange(60), rng.randrange(60)),
            "$%d,%03d.%02d" % (rng.randrange(1, 999), rng.randrange(1000), rng.randrange(100)),
            "%d" % rng.randrange(10 ** rng.randrange(1, 18)),
            "%.6f" % (rng.random() * 10 ** rng.randrange(0, 6)),
            "+1 (%03d) %03d-%04d" % (rng.randrange(200, 999), rng.randrange(1000), rng.randrange(10000)),
            "v%d.%d.%d" % (rng.randrange(10), rng.randrange(40), rng.randrange(100)),
            "0x%08X" % rng.randrange(1 << 32),
            "%d×%d=%d" % (lambda a, b: (a, b, a * b))(rng.randrange(100), rng.randrange(100)),
            "١٢٣٤ ٥٦٧ ۸۹ ४२ ๑๒๓",
            "%de%d %d.%de-%d" % (rng.randrange(10), rng.randrange(30), rng.randrange(10), rng.randrange(10),
                                rng.randrange(30)),
        ]))
    return "\n".join(out) + "\n"


def whitespace(n):
    out = []
    ws = [" ", "  ", "   ", "    ", "\t", "\t\t", "\u00a0", "\u3000", " \t ", "        "]
    for _ in range(n):
        line = rng.choice(ws) + rng.choice(NOUNS) + rng.choice(ws) + rng.choice(ADJS) + rng.choice(ws)
        if rng.random() < 0.3:
            line += "\r\n"
        elif rng.random() < 0.3:
            line += "\n\n\n"
        elif rng.random() < 0.2:
            line += " \n  \n"
        out.append(line)
    return "\n".join(out) + "\n"


def xtml(n):
    out = []
    for _ in range(n):
        role = rng.choice(["user", "assistant", "system", "tool"])
        body = sentence()
        if role == "assistant":
            body = ("<|open|>think<|sep|>%s<|close|>think<|sep|><|open|>response<|sep|>%s<|close|>response<|sep|>"
                    % (sentence(), sentence()))
            if rng.random() < 0.4:
                body += ('<|open|>tools<|sep|><|open|>call tool="get_%s" index="1"<|sep|>'
                         '<|open|>argument key="city" type="string"<|sep|>%s<|close|>argument<|sep|>'
                         '<|close|>call<|sep|><|close|>tools<|sep|>') % (rng.choice(IDENTS), rng.choice(PLACES))
        attrs = ' role="%s"' % role
        if role == "tool":
            attrs += ' tool="get_%s" index="%d"' % (rng.choice(IDENTS), rng.randrange(1, 4))
        out.append('<|open|>message%s<|sep|>%s<|close|>message<|sep|><|end_of_msg|>' % (attrs, body))
        if rng.random() < 0.3:
            out.append('<div class="%s" data-id="%d">&amp; &quot;%s&quot; &lt;b&gt;</div>' % (
                rng.choice(ADJS), rng.randrange(1000), rng.choice(NOUNS)))
    return "\n".join(out) + "\n"


def markdown(n):
    out = []
    for i in range(n):
        out.append("## %d. %s %s\n" % (i + 1, rng.choice(ADJS).capitalize(), rng.choice(NOUNS)))
        out.append("- **%s**: %s\n- `%s()` returns `%s`\n" % (rng.choice(NOUNS), sentence(), rng.choice(IDENTS),
                                                           rng.choice(["None", "null", "42", "[]"])))
        out.append("| %s | %d | %s |\n|---|---:|:---:|\n| %s | %d | %s |\n" % (
            rng.choice(NOUNS), rng.randrange(100), rng.choice(ADJS), rng.choice(NOUNS), rng.randrange(100),
            rng.choice(EMOJI)))
    return "\n".join(out)


ONSETS = ["", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "qu", "r", "s", "t", "v", "w",
          "z", "br", "ch", "cl", "dr", "fl", "gr", "kr", "pl", "pr", "sh", "sk", "sp", "st", "str", "th", "tr"]
NUCLEI = ["a", "e", "i", "o", "u", "y", "ai", "ea", "ee", "ie", "oo", "ou", "au", "io"]
CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "ng", "nd", "st", "ck", "rk", "x", "th"]
CYRILLIC = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
GREEK = "αβγδεζηθικλμνξοπρστυφχψω"


def pseudo_word():
    word = "".join(rng.choice(ONSETS) + rng.choice(NUCLEI) + rng.choice(CODAS) for _ in range(rng.randrange(1, 4)))
    r = rng.random()
    if r < 0.1:
        return word.capitalize()
    if r < 0.13:
        return word.upper()
    return word


def lexicon(lines):
    """Invented words with a Zipf-like spread (many rare ones), plus random Han, Hangul, Cyrillic and Greek
    strings, so the corpus has enough distinct pieces for vocabularies of 32k+ ranks."""
    words = [pseudo_word() for _ in range(30000)]
    out = []
    for _ in range(lines):
        kind = rng.random()
        if kind < 0.55:
            line = " ".join(words[min(int(rng.paretovariate(0.6)) - 1, len(words) - 1)] if rng.random() < 0.5
                            else rng.choice(words) for _ in range(rng.randrange(4, 14)))
            out.append(line + rng.choice([".", ",", "!", "?", ";", ":"]))
        elif kind < 0.75:
            out.append("".join(chr(rng.randrange(0x4E00, 0x7000)) for _ in range(rng.randrange(2, 20))) +
                       rng.choice(["。", "，", "！", "？", "、"]))
        elif kind < 0.85:
            out.append(" ".join("".join(chr(rng.randrange(0xAC00, 0xD7A4)) for _ in range(rng.randrange(1, 5)))
                                for _ in range(rng.randrange(2, 8))) + ".")
        else:
            alphabet = rng.choice([CYRILLIC, GREEK])
            out.append(" ".join("".join(rng.choice(alphabet) for _ in range(rng.randrange(2, 10)))
                                for _ in range(rng.randrange(3, 10))) + ".")
    return "\n".join(out) + "\n"


FILES = {
    "01-prose.txt": lambda: prose(420),
    "02-code.txt": lambda: code(380),
    "03-json.txt": lambda: "".join(json_blob() for _ in range(160)),
    "04-cjk.txt": lambda: cjk(700),
    "05-emoji.txt": lambda: emoji_lines(500),
    "06-scripts-and-marks.txt": lambda: combining(900),
    "07-digits.txt": lambda: digits(2200),
    "08-whitespace.txt": lambda: whitespace(1200),
    "09-xtml.txt": lambda: xtml(500),
    "10-markdown.txt": lambda: markdown(300),
    "11-lexicon.txt": lambda: lexicon(3500),
}

if __name__ == "__main__":
    for name, make in FILES.items():
        with open(os.path.join(HERE, name), "w", encoding="utf-8", newline="") as f:
            f.write(make())
