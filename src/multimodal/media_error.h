// MediaError: an image or video that cannot be used (corrupt, truncated, unsupported,
// over a limit). what() names the format and the problem ("corrupt PNG: ...", "image of
// 100000x100000 pixels exceeds the limit of ..."); the server answers it with a 400.
#pragma once

#include "base/error.h"

namespace vtllm::multimodal {

class MediaError : public Error {
 public:
  using Error::Error;
};

}  // namespace vtllm::multimodal
