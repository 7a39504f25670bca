#include "protocol/frame_decoder.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace tributary {

Status FrameDecoder::Feed(std::span<const uint8_t> data, std::vector<Frame>* frames) {
  if (!error_.ok()) return error_;
  while (!data.empty()) {
    if (!header_) {
      const size_t take = std::min(kFrameHeaderBytes - header_have_, data.size());
      std::memcpy(header_bytes_.data() + header_have_, data.data(), take);
      header_have_ += take;
      data = data.subspan(take);
      if (header_have_ < kFrameHeaderBytes) break;
      Result<FrameHeader> h = ParseFrameHeader(header_bytes_, limits_);
      if (!h.ok()) {
        error_ = h.status();
        return error_;
      }
      header_ = *h;
      payload_.clear();
      // Bounded by max_frame_payload, which the header was just checked against.
      payload_.reserve(static_cast<size_t>(header_->payload_length));
    }
    const uint64_t missing = header_->payload_length - payload_.size();
    const size_t take = static_cast<size_t>(std::min<uint64_t>(missing, data.size()));
    payload_.insert(payload_.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(take));
    data = data.subspan(take);
    if (payload_.size() == header_->payload_length) {
      frames->push_back(Frame{*header_, std::move(payload_)});
      payload_ = {};
      header_.reset();
      header_have_ = 0;
      ++frames_decoded_;
    }
  }
  return Status::Ok();
}

}  // namespace tributary
