// MediaError: an image or video the server was given cannot be used (corrupt, truncated,
// unsupported, over a limit). The server turns it into a 400 that carries the message.
#pragma once

#include "base/error.h"

namespace vtllm::multimodal {

struct MediaError : vtllm::Error {
  using vtllm::Error::Error;
};

}  // namespace vtllm::multimodal
