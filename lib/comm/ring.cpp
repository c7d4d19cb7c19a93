#include "lib/comm/ring.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "lib/comm/mpi.h"

namespace dbs::comm {

/* Ring allreduce over p ranks; rank r sends only to its right neighbour (r + 1) and receives
 * only from its left (r - 1), indices mod p.
 *   segment i: the i-th of p contiguous parts of the buffer: near-equal for the allreduce (the
 *              first count % p get one extra element; empty when count < p), the caller's
 *              counts for the halves.
 *   chunk:     one message, at most max_chunk_bytes of a segment; a segment's chunks are all
 *              posted at once so the wire stays busy while earlier chunks are being added.
 * Rank r owns segment o = r + shift (shift 1 for the allreduce, 0 for the halves).
 * Reduce-scatter, steps s = 0 .. p-2: send segment (o - 1 - s), receive segment (o - 2 - s) into
 * scratch and add it in place. Afterwards rank r holds the full sum of segment o.
 * Allgather, steps s = 0 .. p-2: send segment (o - s), receive segment (o - 1 - s) straight into
 * the buffer. Every segment's sum is computed by one rank and copied, so all ranks end with the
 * same bits. Sends and receives of one step touch different segments, so they never overlap.
 */

namespace {

constexpr int ring_tag = 0x7db5;  // below 32767, the smallest MPI_TAG_UB allowed

// Segment i is [begin(i), begin(i) + length(i)) of the buffer.
struct Segments {
  std::vector<std::size_t> offset;  // p + 1 entries, offset[p] = count
  std::size_t begin(std::size_t i) const { return offset[i]; }
  std::size_t length(std::size_t i) const { return offset[i + 1] - offset[i]; }

  // p contiguous, near-equal parts (the first count % p one longer).
  static Segments equal(std::size_t count, std::size_t p) {
    Segments s;
    for (std::size_t i = 0; i <= p; ++i)
      s.offset.push_back(i * (count / p) + std::min(i, count % p));
    return s;
  }
  static Segments of(std::span<const std::size_t> counts) {
    Segments s{{0}};
    for (const std::size_t c : counts) s.offset.push_back(s.offset.back() + c);
    return s;
  }
};

// The index of a completed request among requests (MPI_Waitany when spin; else MPI_Testany,
// without sleeps until spin_until, then with sleeps from kMinSleep doubling up to kDataSleep).
// MPI_UNDEFINED when none is active.
int await_any(std::span<MPI_Request> requests, Wait wait,
              std::chrono::steady_clock::time_point spin_until) {
  const int n = static_cast<int>(requests.size());
  int k = MPI_UNDEFINED;
  if (wait != Wait::sleep) {
    check_mpi(MPI_Waitany(n, requests.data(), &k, MPI_STATUS_IGNORE), "MPI_Waitany");
    return k;
  }
  for (auto pause = kMinSleep;;) {
    int done = 0;
    check_mpi(MPI_Testany(n, requests.data(), &k, &done, MPI_STATUS_IGNORE), "MPI_Testany");
    if (done) return k;
    if (std::chrono::steady_clock::now() < spin_until) continue;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, kDataSleep);
  }
}

// dst is (n), src is (n): dst += src.
void add(float* __restrict dst, const float* __restrict src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}

class Ring {
 public:
  // shift: rank r owns (ends the reduce-scatter with the sum of) segment r + shift.
  Ring(MPI_Comm comm, float* data, Segments segments, int shift, std::size_t chunk, Wait wait)
      : comm_(comm),
        data_(data),
        chunk_(chunk),
        shift_(shift),
        seg_(std::move(segments)),
        wait_(wait) {}

  void reduce_scatter() {
    static thread_local std::vector<float> scratch;
    std::size_t longest = 0;
    for (std::size_t i = 0; i + 1 < seg_.offset.size(); ++i)
      longest = std::max(longest, seg_.length(i));
    scratch.resize(longest);
    const int own = rank_ + shift_;
    for (int s = 0; s < size_ - 1; ++s)
      step(index(own - 1 - s), index(own - 2 - s), scratch.data());
  }

  void allgather() {
    const int own = rank_ + shift_;
    for (int s = 0; s < size_ - 1; ++s) step(index(own - s), index(own - 1 - s), nullptr);
  }

  static int rank_of(MPI_Comm comm) {
    int r = 0;
    check_mpi(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
    return r;
  }
  static int size_of(MPI_Comm comm) {
    int p = 1;
    check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
    return p;
  }

 private:
  std::size_t index(int i) const { return static_cast<std::size_t>(((i % size_) + size_) % size_); }
  std::size_t chunks(std::size_t length) const { return (length + chunk_ - 1) / chunk_; }
  int chunk_length(std::size_t length, std::size_t k) const {
    return static_cast<int>(std::min(chunk_, length - k * chunk_));
  }

  // Sends segment `out` right and receives segment `in` from the left: into scratch and added
  // when scratch is given, else straight into the buffer. A sleeping rank polls the step's
  // messages without sleeps for its first kDataSpin (every rank is there, so over shared memory
  // the step is done by then: sleeping between its messages made the cnn's ring allreduce 2x
  // slower, the neighbour's transfer waiting for this rank's next poll), then with sleeps.
  void step(std::size_t out, std::size_t in, float* scratch) {
    const auto spin_until = std::chrono::steady_clock::now() + kDataSpin;
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
        const int k = await_any(std::span<MPI_Request>(requests_.data(), n_in), wait_, spin_until);
        const auto kk = static_cast<std::size_t>(k);
        add(data_ + seg_.begin(in) + kk * chunk_, scratch + kk * chunk_,
            static_cast<std::size_t>(chunk_length(in_len, kk)));
      }
    }
    const auto left_to_spin = std::chrono::duration_cast<std::chrono::microseconds>(
        spin_until - std::chrono::steady_clock::now());
    await_all(requests_, wait_, kDataSleep, std::max(left_to_spin, std::chrono::microseconds{0}));
  }

  MPI_Comm comm_;
  float* data_;
  std::size_t chunk_;  // elements per message
  int rank_ = rank_of(comm_), size_ = size_of(comm_);
  int shift_;
  Segments seg_;
  Wait wait_;
  std::vector<MPI_Request> requests_;
};

}  // namespace

std::size_t chunk_elements(std::size_t max_chunk_bytes) {
  return std::clamp<std::size_t>(max_chunk_bytes / sizeof(float), 1, INT_MAX);
}

void ring_allreduce_sum(MPI_Comm comm, float* data, std::size_t count, std::size_t max_chunk_bytes,
                        Wait wait) {
  const auto p = static_cast<std::size_t>(Ring::size_of(comm));
  if (p == 1 || count == 0) return;
  Ring ring(comm, data, Segments::equal(count, p), 1, chunk_elements(max_chunk_bytes), wait);
  ring.reduce_scatter();
  ring.allgather();
}

void ring_reduce_scatter_sum(MPI_Comm comm, float* data, std::span<const std::size_t> counts,
                             std::size_t max_chunk_bytes, Wait wait) {
  if (counts.size() <= 1) return;
  Ring(comm, data, Segments::of(counts), 0, chunk_elements(max_chunk_bytes), wait).reduce_scatter();
}

void ring_allgather(MPI_Comm comm, float* data, std::span<const std::size_t> counts,
                    std::size_t max_chunk_bytes, Wait wait) {
  if (counts.size() <= 1) return;
  Ring(comm, data, Segments::of(counts), 0, chunk_elements(max_chunk_bytes), wait).allgather();
}

}  // namespace dbs::comm
