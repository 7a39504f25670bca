#include "protocol/frame_decoder.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/check.h"

namespace tributary {

namespace {
// A plain-frame buffer larger than this is freed after its frame, so an idle connection does not
// keep megabytes.
constexpr size_t kKeepPayloadCapacity = 64 * 1024;
}  // namespace

Status FrameDecoder::Fail(Status s) {
  error_ = std::move(s);
  payload_ = {};
  return error_;
}

void FrameDecoder::EndFrame() {
  stage_ = Stage::kHeader;
  header_have_ = 0;
  chunk_have_ = 0;
  ++frames_decoded_;
  if (payload_.capacity() > kKeepPayloadCapacity) {
    payload_ = {};
  } else {
    payload_.clear();
  }
}

bool FrameDecoder::SkipChunkData(size_t n) {
  TRIB_CHECK(n > 0 && n <= chunk_data_left(), "FrameDecoder: skipped past the chunk data");
  remaining_ -= n;
  if (remaining_ > 0) return false;
  EndFrame();
  return true;
}

Status FrameDecoder::Feed(std::span<const uint8_t> data, FrameSink& sink) {
  if (!error_.ok()) return error_;
  while (!data.empty() || (stage_ != Stage::kHeader && remaining_ == 0)) {
    switch (stage_) {
      case Stage::kHeader: {
        const size_t take = std::min(kFrameHeaderBytes - header_have_, data.size());
        std::memcpy(header_bytes_.data() + header_have_, data.data(), take);
        header_have_ += take;
        data = data.subspan(take);
        if (header_have_ < kFrameHeaderBytes) return Status::Ok();
        Result<FrameHeader> h = ParseFrameHeader(header_bytes_, limits_);
        if (!h.ok()) return Fail(h.status());
        header_ = *h;
        if (header_.is_chunk()) {
          stage_ = Stage::kChunkHeader;
          remaining_ = header_.payload_length - kChunkHeaderBytes;  // checked >= 24 by the parser
        } else {
          stage_ = Stage::kPayload;
          remaining_ = header_.payload_length;
        }
        break;
      }
      case Stage::kPayload: {
        const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, data.size()));
        if (payload_.empty() && take == remaining_) {  // the whole payload is here: no copy
          const Status s = sink.OnFrame(header_, data.first(take));
          if (!s.ok()) return Fail(s);
          data = data.subspan(take);
          remaining_ = 0;
          EndFrame();
          break;
        }
        // Bounded by max_frame_payload, which the header was checked against.
        if (payload_.empty()) payload_.reserve(static_cast<size_t>(remaining_));
        payload_.insert(payload_.end(), data.begin(), data.begin() + static_cast<ptrdiff_t>(take));
        data = data.subspan(take);
        remaining_ -= take;
        if (remaining_ == 0) {
          const Status s = sink.OnFrame(header_, payload_);
          if (!s.ok()) return Fail(s);
          EndFrame();
        }
        break;
      }
      case Stage::kChunkHeader: {
        const size_t take = std::min(kChunkHeaderBytes - chunk_have_, data.size());
        std::memcpy(chunk_bytes_.data() + chunk_have_, data.data(), take);
        chunk_have_ += take;
        data = data.subspan(take);
        if (chunk_have_ < kChunkHeaderBytes) return Status::Ok();
        const Status s = sink.OnChunkBegin(header_, ParseChunkHeader(chunk_bytes_.data()));
        if (!s.ok()) return Fail(s);
        stage_ = Stage::kChunkData;
        break;
      }
      case Stage::kChunkData: {
        const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, data.size()));
        remaining_ -= take;
        const bool last = remaining_ == 0;
        if (take > 0 || last) {
          const Status s = sink.OnChunkData(data.first(take), last);
          if (!s.ok()) return Fail(s);
        }
        data = data.subspan(take);
        if (last) EndFrame();
        break;
      }
    }
  }
  return Status::Ok();
}

}  // namespace tributary
