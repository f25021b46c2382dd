// ThreadCommunicators: a group of Communicators whose ranks are threads of one process, for unit tests
// of the sharded forward pass and the step protocol (the real ranks, processes over Gloo, are tested in
// src/dist and tests/dist). Every collective is two barriers around a read of every rank's buffer, so
// results are summed in rank order and identical on every rank; a rank that does not arrive within the
// timeout makes the others' calls fail (a Status, as a lost peer would).
#pragma once

#include <memory>
#include <vector>

#include "src/dist/communicator.h"

namespace k3::model::testing {

std::vector<std::unique_ptr<dist::Communicator>> MakeThreadCommunicators(int world);

}  // namespace k3::model::testing
