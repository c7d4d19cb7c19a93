#include "lib/comm/local.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lib/common/error.h"

namespace dbs::comm {

namespace detail {

// Shared by the ranks of one group. A collective is: every rank posts its slot, meets the others
// at a barrier, reads the other slots, meets again (so no buffer is reused while being read),
// then writes its own result. A generation counter makes the barrier reusable.
struct LocalState {
  struct Slot {
    const void* data = nullptr;
    std::size_t length = 0;  // elements or bytes, as the collective defines
    int root = 0;
  };

  explicit LocalState(int n) : size(n), slots(static_cast<std::size_t>(n)) {}

  [[noreturn]] void throw_aborted() const {
    throw CommError("aborted by rank " + std::to_string(abort_rank));
  }

  void post(int rank, const void* data, std::size_t length, int root = 0) {
    std::lock_guard lock(mutex);
    if (aborted) throw_aborted();
    slots[static_cast<std::size_t>(rank)] = Slot{data, length, root};
  }

  // Blocks until all ranks arrive; throws CommError if the group is aborted before that.
  void wait() {
    std::unique_lock lock(mutex);
    if (aborted) throw_aborted();
    const unsigned long long gen = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation != gen || aborted; });
    if (generation == gen) throw_aborted();
  }

  void abort(int rank) {
    std::lock_guard lock(mutex);
    if (!aborted) {
      aborted = true;
      abort_rank = rank;
    }
    cv.notify_all();
  }

  bool is_aborted() {
    std::lock_guard lock(mutex);
    return aborted;
  }

  // After the first wait() of a collective: every rank sees the same slots, so every rank makes
  // the same decision here and none is left waiting alone.
  void check_same(const char* what) const {
    for (const Slot& s : slots) {
      if (s.length != slots[0].length || s.root != slots[0].root) {
        throw CheckError(std::string("LocalGroup: ") + what +
                         " called with different lengths or roots on different ranks");
      }
    }
  }

  const int size;
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<Slot> slots;
  int arrived = 0;
  unsigned long long generation = 0;
  bool aborted = false;
  int abort_rank = -1;
};

}  // namespace detail

namespace {

class LocalCommunicator final : public Communicator {
 public:
  LocalCommunicator(std::shared_ptr<detail::LocalState> state, int rank)
      : state_(std::move(state)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return state_->size; }
  void allreduce_sum(std::span<float> data) override { reduce(data); }
  void allreduce_sum(std::span<double> data) override { reduce(data); }

  // Sums only this rank's segment, in rank order: the same bits as allreduce_sum there.
  void reduce_scatter_sum(std::span<float> data, std::span<const std::size_t> counts) override {
    check_segments(data.size(), counts, size());
    const std::size_t begin = offset(counts, rank_), n = counts[static_cast<std::size_t>(rank_)];
    state_->post(rank_, data.data(), data.size());
    state_->wait();
    state_->check_same("reduce_scatter_sum");
    const auto& slots = state_->slots;
    std::vector<float> sum(n);
    const auto* first = static_cast<const float*>(slots[0].data) + begin;
    std::copy(first, first + n, sum.begin());
    for (std::size_t r = 1; r < slots.size(); ++r) {
      const float* src = static_cast<const float*>(slots[r].data) + begin;
      for (std::size_t i = 0; i < n; ++i) sum[i] += src[i];
    }
    state_->wait();
    std::copy(sum.begin(), sum.end(), data.begin() + static_cast<std::ptrdiff_t>(begin));
  }

  void allgather_segments(std::span<float> data, std::span<const std::size_t> counts) override {
    check_segments(data.size(), counts, size());
    state_->post(rank_, data.data(), data.size());
    state_->wait();
    state_->check_same("allgather_segments");
    for (int r = 0; r < size(); ++r) {
      if (r == rank_) continue;
      const std::size_t begin = offset(counts, r), n = counts[static_cast<std::size_t>(r)];
      const float* src = static_cast<const float*>(state_->slots[static_cast<std::size_t>(r)].data);
      std::copy(src + begin, src + begin + n, data.begin() + static_cast<std::ptrdiff_t>(begin));
    }
    state_->wait();
  }

  void allgather_bytes(const void* in, std::size_t bytes, void* out) override {
    state_->post(rank_, in, bytes);
    state_->wait();
    state_->check_same("allgather_bytes");
    auto* dst = static_cast<unsigned char*>(out);
    for (std::size_t r = 0; r < state_->slots.size(); ++r) {
      const void* src = state_->slots[r].data;
      if (bytes > 0 && src != dst + r * bytes) std::memcpy(dst + r * bytes, src, bytes);
    }
    state_->wait();
  }

  void broadcast_bytes(void* data, std::size_t bytes, int root) override {
    if (root < 0 || root >= size()) {
      throw CheckError("LocalGroup: broadcast root " + std::to_string(root) + " out of range");
    }
    state_->post(rank_, data, bytes, root);
    state_->wait();
    state_->check_same("broadcast_bytes");
    if (rank_ != root && bytes > 0) {
      std::memcpy(data, state_->slots[static_cast<std::size_t>(root)].data, bytes);
    }
    state_->wait();
  }

  void barrier() override { state_->wait(); }

  void abort(int) noexcept override { state_->abort(rank_); }

 private:
  static std::size_t offset(std::span<const std::size_t> counts, int rank) {
    return std::accumulate(counts.begin(), counts.begin() + rank, std::size_t{0});
  }

  // Every rank sums all buffers in rank order into its own scratch, so all get identical bits.
  template <typename T>
  void reduce(std::span<T> data) {
    state_->post(rank_, data.data(), data.size());
    state_->wait();
    state_->check_same("allreduce_sum");
    const auto& slots = state_->slots;
    std::vector<T> sum(data.size());
    const T* first = static_cast<const T*>(slots[0].data);
    std::copy(first, first + data.size(), sum.begin());
    for (std::size_t r = 1; r < slots.size(); ++r) {
      const T* src = static_cast<const T*>(slots[r].data);
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += src[i];
    }
    state_->wait();
    std::copy(sum.begin(), sum.end(), data.begin());
  }

  std::shared_ptr<detail::LocalState> state_;
  int rank_;
};

}  // namespace

LocalGroup::LocalGroup(int size) {
  if (size < 1) throw CheckError("LocalGroup: size must be >= 1, got " + std::to_string(size));
  state_ = std::make_shared<detail::LocalState>(size);
  for (int r = 0; r < size; ++r) comms_.push_back(std::make_unique<LocalCommunicator>(state_, r));
}

LocalGroup::~LocalGroup() = default;

int LocalGroup::size() const {
  return state_->size;
}

Communicator& LocalGroup::at(int rank) {
  DBS_CHECK(rank >= 0 && rank < size());
  return *comms_[static_cast<std::size_t>(rank)];
}

bool LocalGroup::aborted() const {
  return state_->is_aborted();
}

void LocalGroup::run(int size, const std::function<void(Communicator&)>& body) {
  LocalGroup group(size);
  std::mutex first_mutex;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(group.at(r));
      } catch (...) {
        {
          // Recorded before the abort is marked, so the original error wins over the
          // CommErrors it causes on the other ranks.
          std::lock_guard lock(first_mutex);
          if (!first) first = std::current_exception();
        }
        group.state_->abort(r);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
  if (group.state_->aborted) group.state_->throw_aborted();
}

}  // namespace dbs::comm
