#include "lib/emulate/link.h"

#include <chrono>
#include <thread>

#include "lib/replay/model.h"

namespace dbs::emulate {
namespace {

class Network final : public comm::Communicator {
 public:
  Network(comm::Communicator& inner, const replay::Link& ring) : inner_(&inner), ring_(ring) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void allreduce_sum(std::span<float> data) override {
    inner_->allreduce_sum(data);
    wait(data.size_bytes(), 1.0);
  }
  void allreduce_sum(std::span<double> data) override { inner_->allreduce_sum(data); }
  void reduce_scatter_sum(std::span<float> data, std::span<const std::size_t> counts) override {
    inner_->reduce_scatter_sum(data, counts);
    wait(data.size_bytes(), 0.5);
  }
  void allgather_segments(std::span<float> data, std::span<const std::size_t> counts) override {
    inner_->allgather_segments(data, counts);
    wait(data.size_bytes(), 0.5);
  }
  void start_allreduce_sum(std::span<float> data) override {
    inner_->start_allreduce_sum(data);
    started_ += data.size_bytes();
  }
  void progress() override { inner_->progress(); }
  void finish() override {
    inner_->finish();
    wait(started_, 1.0);
    started_ = 0;
  }
  void allgather_bytes(const void* in, std::size_t bytes, void* out) override {
    inner_->allgather_bytes(in, bytes, out);
  }
  void broadcast_bytes(void* data, std::size_t bytes, int root) override {
    inner_->broadcast_bytes(data, bytes, root);
  }
  void barrier() override { inner_->barrier(); }
  void set_threads(int threads) override { inner_->set_threads(threads); }
  std::string waiting() const override { return inner_->waiting(); }
  void abort(int code) noexcept override { inner_->abort(code); }
  std::string host() const override { return inner_->host(); }

 private:
  // The model's time for an allreduce of `bytes`, times `part`.
  void wait(std::size_t bytes, double part) const {
    const double s = part * replay::ring_allreduce_s(size(), static_cast<double>(bytes),
                                                     ring_.latency_s, ring_.bandwidth);
    if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
  }

  comm::Communicator* inner_;
  replay::Link ring_;
  std::size_t started_ = 0;  // bytes of the started allreduces not finished yet
};

}  // namespace

std::unique_ptr<comm::Communicator> with_network(comm::Communicator& inner,
                                                 const replay::Spec& spec) {
  return std::make_unique<Network>(inner, spec.slowest_link());
}

}  // namespace dbs::emulate
