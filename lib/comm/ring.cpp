#include "lib/comm/ring.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "lib/comm/mpi.h"

namespace dbs::comm {

/* Ring allreduce over p ranks; rank r sends only to its right neighbour (r + 1) and receives
 * only from its left (r - 1), indices mod p.
 *   segment i: the i-th of p contiguous, near-equal parts of the buffer (the first count % p
 *              get one extra element; empty when count < p).
 *   chunk:     one message, at most max_chunk_bytes of a segment; a segment's chunks are all
 *              posted at once so the wire stays busy while earlier chunks are being added.
 * Reduce-scatter, steps s = 0 .. p-2: send segment (r - s), receive segment (r - s - 1) into
 * scratch and add it in place. Afterwards rank r holds the full sum of segment (r + 1).
 * Allgather, steps s = 0 .. p-2: send segment (r + 1 - s), receive segment (r - s) straight into
 * the buffer. Every segment's sum is computed by one rank and copied, so all ranks end with the
 * same bits. Sends and receives of one step touch different segments, so they never overlap.
 */

namespace {

constexpr int ring_tag = 0x7db5;  // below 32767, the smallest MPI_TAG_UB allowed

struct Segments {
  std::size_t base, extra;  // segment length is base, +1 for the first `extra` segments
  std::size_t begin(std::size_t i) const { return i * base + std::min(i, extra); }
  std::size_t length(std::size_t i) const { return base + (i < extra ? 1 : 0); }
};

// dst is (n), src is (n): dst += src.
void add(float* __restrict dst, const float* __restrict src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}

class Ring {
 public:
  Ring(MPI_Comm comm, float* data, std::size_t count, std::size_t chunk)
      : comm_(comm), data_(data), chunk_(chunk) {
    check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
    const auto p = static_cast<std::size_t>(size_);
    seg_ = Segments{count / p, count % p};
  }

  int size() const { return size_; }

  void run() {
    static thread_local std::vector<float> scratch;
    scratch.resize(seg_.length(0));
    for (int s = 0; s < size_ - 1; ++s)
      step(index(rank_ - s), index(rank_ - s - 1), scratch.data());
    for (int s = 0; s < size_ - 1; ++s) step(index(rank_ + 1 - s), index(rank_ - s), nullptr);
  }

 private:
  std::size_t index(int i) const { return static_cast<std::size_t>(((i % size_) + size_) % size_); }
  std::size_t chunks(std::size_t length) const { return (length + chunk_ - 1) / chunk_; }
  int chunk_length(std::size_t length, std::size_t k) const {
    return static_cast<int>(std::min(chunk_, length - k * chunk_));
  }

  // Sends segment `out` right and receives segment `in` from the left: into scratch and added
  // when scratch is given, else straight into the buffer.
  void step(std::size_t out, std::size_t in, float* scratch) {
    const int left = static_cast<int>(index(rank_ - 1));
    const int right = static_cast<int>(index(rank_ + 1));
    const std::size_t in_len = seg_.length(in), out_len = seg_.length(out);
    const std::size_t n_in = chunks(in_len), n_out = chunks(out_len);
    float* in_dst = scratch != nullptr ? scratch : data_ + seg_.begin(in);
    requests_.assign(n_in + n_out, MPI_REQUEST_NULL);
    for (std::size_t k = 0; k < n_in; ++k) {
      check_mpi(MPI_Irecv(in_dst + k * chunk_, chunk_length(in_len, k), MPI_FLOAT, left, ring_tag,
                          comm_, &requests_[k]),
                "MPI_Irecv");
    }
    for (std::size_t k = 0; k < n_out; ++k) {
      check_mpi(MPI_Isend(data_ + seg_.begin(out) + k * chunk_, chunk_length(out_len, k), MPI_FLOAT,
                          right, ring_tag, comm_, &requests_[n_in + k]),
                "MPI_Isend");
    }
    if (scratch != nullptr) {
      for (std::size_t done = 0; done < n_in; ++done) {
        int k = MPI_UNDEFINED;
        check_mpi(MPI_Waitany(static_cast<int>(n_in), requests_.data(), &k, MPI_STATUS_IGNORE),
                  "MPI_Waitany");
        const auto kk = static_cast<std::size_t>(k);
        add(data_ + seg_.begin(in) + kk * chunk_, scratch + kk * chunk_,
            static_cast<std::size_t>(chunk_length(in_len, kk)));
      }
    }
    check_mpi(
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall");
  }

  MPI_Comm comm_;
  float* data_;
  std::size_t chunk_;  // elements per message
  int rank_ = 0, size_ = 1;
  Segments seg_{};
  std::vector<MPI_Request> requests_;
};

}  // namespace

void ring_allreduce_sum(MPI_Comm comm, float* data, std::size_t count,
                        std::size_t max_chunk_bytes) {
  const std::size_t chunk = std::clamp<std::size_t>(max_chunk_bytes / sizeof(float), 1, INT_MAX);
  Ring ring(comm, data, count, chunk);
  if (ring.size() == 1 || count == 0) return;
  ring.run();
}

}  // namespace dbs::comm
