#include "lib/nn/layers.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "lib/common/error.h"
#include "lib/common/hash.h"

namespace dbs::nn {
namespace {

// Glorot-uniform weights from stream (seed, stream), element i; zero biases.
void glorot_init(float* w, std::size_t count, double fan_in, double fan_out, std::uint64_t seed,
                 std::uint64_t stream) {
  const double limit = std::sqrt(6.0 / (fan_in + fan_out));
  const std::uint64_t base = splitmix64(splitmix64(seed) ^ (stream * 0xd1b54a32d192ed03ULL));
  for (std::size_t i = 0; i < count; ++i) {
    const double u = static_cast<double>(splitmix64(base + i) >> 11) * 0x1.0p-53;  // [0, 1)
    w[i] = static_cast<float>((2.0 * u - 1.0) * limit);
  }
}

class Conv2d final : public Layer {
 public:
  Conv2d(int out, int k, bool same) : out_(out), k_(k), same_(same) {
    if (k <= 0 || k % 2 == 0)
      throw ConfigError("conv2d: kernel size must be odd, got " + std::to_string(k));
  }
  std::string name() const override {
    return "conv" + std::to_string(k_) + "x" + std::to_string(k_) + "x" + std::to_string(out_) +
           (same_ ? "same" : "");
  }
  Shape output_shape(Shape in) const override {
    const ConvShape s = shape(1, in);
    if (s.h_out() <= 0 || s.w_out() <= 0)
      throw ConfigError(name() + ": input " + in.str() + " is smaller than the kernel");
    return {out_, s.h_out(), s.w_out()};
  }
  std::size_t param_count(Shape in) const override {
    return static_cast<std::size_t>(out_) * in.c * k_ * k_ + out_;
  }
  void init(std::uint64_t seed, std::uint64_t stream) override {
    const std::size_t nw = static_cast<std::size_t>(out_) * in_.c * k_ * k_;
    glorot_init(params_, nw, in_.c * k_ * k_, out_ * k_ * k_, seed, stream);
    std::memset(params_ + nw, 0, sizeof(float) * out_);
  }
  void forward(const Tensor& x, Tensor& y, const Context& ctx) override {
    y.resize(x.n, output_shape(x.shape));
    const ConvShape s = shape(x.n, x.shape);
    const float* b = params_ + weights(x.shape);
    if (ctx.reference)
      ref::conv2d_forward(s, x.ptr(), params_, b, y.ptr());
    else
      fast::conv2d_forward(s, x.ptr(), params_, b, y.ptr());
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx,
                const Context& ctx) override {
    if (dx != nullptr) dx->resize(x.n, x.shape);
    const ConvShape s = shape(x.n, x.shape);
    float* dxp = dx != nullptr ? dx->ptr() : nullptr;
    float* db = grads_ + weights(x.shape);
    if (ctx.reference)
      ref::conv2d_backward(s, x.ptr(), params_, dy.ptr(), dxp, grads_, db);
    else
      fast::conv2d_backward(s, x.ptr(), params_, dy.ptr(), dxp, grads_, db);
  }
  double forward_flops(Shape in) const override {
    const Shape o = output_shape(in);
    return 2.0 * o.size() * in.c * k_ * k_;
  }

 private:
  ConvShape shape(int n, Shape in) const {
    return {n, in.c, in.h, in.w, out_, k_, same_ ? k_ / 2 : 0};
  }
  std::size_t weights(Shape in) const { return static_cast<std::size_t>(out_) * in.c * k_ * k_; }
  int out_, k_;
  bool same_;
};

class Dense final : public Layer {
 public:
  explicit Dense(int out) : out_(out) {}
  std::string name() const override { return "dense" + std::to_string(out_); }
  Shape output_shape(Shape) const override { return {out_, 1, 1}; }
  std::size_t param_count(Shape in) const override { return in.size() * out_ + out_; }
  void init(std::uint64_t seed, std::uint64_t stream) override {
    const std::size_t nw = in_.size() * out_;
    glorot_init(params_, nw, static_cast<double>(in_.size()), out_, seed, stream);
    std::memset(params_ + nw, 0, sizeof(float) * out_);
  }
  void forward(const Tensor& x, Tensor& y, const Context& ctx) override {
    y.resize(x.n, output_shape(x.shape));
    const int in = static_cast<int>(x.shape.size());
    const float* b = params_ + static_cast<std::size_t>(in) * out_;
    if (ctx.reference)
      ref::dense_forward(x.n, in, out_, x.ptr(), params_, b, y.ptr());
    else
      fast::dense_forward(x.n, in, out_, x.ptr(), params_, b, y.ptr());
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx,
                const Context& ctx) override {
    if (dx != nullptr) dx->resize(x.n, x.shape);
    const int in = static_cast<int>(x.shape.size());
    float* dxp = dx != nullptr ? dx->ptr() : nullptr;
    float* db = grads_ + static_cast<std::size_t>(in) * out_;
    if (ctx.reference)
      ref::dense_backward(x.n, in, out_, x.ptr(), params_, dy.ptr(), dxp, grads_, db);
    else
      fast::dense_backward(x.n, in, out_, x.ptr(), params_, dy.ptr(), dxp, grads_, db);
  }
  double forward_flops(Shape in) const override { return 2.0 * in.size() * out_; }

 private:
  int out_;
};

class MaxPool2d final : public Layer {
 public:
  explicit MaxPool2d(int k) : k_(k) {
    if (k <= 0) throw ConfigError("maxpool2d: window must be positive");
  }
  std::string name() const override { return "maxpool" + std::to_string(k_); }
  Shape output_shape(Shape in) const override {
    if (in.h < k_ || in.w < k_)
      throw ConfigError(name() + ": input " + in.str() + " is smaller than the window");
    return {in.c, in.h / k_, in.w / k_};
  }
  void forward(const Tensor& x, Tensor& y, const Context& ctx) override {
    y.resize(x.n, output_shape(x.shape));
    arg_.resize(y.size());
    const PoolShape s{x.n, x.shape.c, x.shape.h, x.shape.w, k_};
    if (ctx.reference)
      ref::maxpool_forward(s, x.ptr(), y.ptr(), arg_.data());
    else
      fast::maxpool_forward(s, x.ptr(), y.ptr(), arg_.data());
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx,
                const Context& ctx) override {
    if (dx == nullptr) return;
    dx->resize(x.n, x.shape);
    const PoolShape s{x.n, x.shape.c, x.shape.h, x.shape.w, k_};
    if (ctx.reference)
      ref::maxpool_backward(s, dy.ptr(), arg_.data(), dx->ptr());
    else
      fast::maxpool_backward(s, dy.ptr(), arg_.data(), dx->ptr());
  }
  double forward_flops(Shape in) const override { return static_cast<double>(in.size()); }

 private:
  int k_;
  std::vector<std::int32_t> arg_;  // argmax of each output, from the last forward
};

class Relu final : public Layer {
 public:
  std::string name() const override { return "relu"; }
  Shape output_shape(Shape in) const override { return in; }
  void forward(const Tensor& x, Tensor& y, const Context& ctx) override {
    y.resize(x.n, x.shape);
    if (ctx.reference)
      ref::relu_forward(x.size(), x.ptr(), y.ptr());
    else
      fast::relu_forward(x.size(), x.ptr(), y.ptr());
  }
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                const Context& ctx) override {
    if (dx == nullptr) return;
    dx->resize(x.n, x.shape);
    if (ctx.reference)
      ref::relu_backward(y.size(), y.ptr(), dy.ptr(), dx->ptr());
    else
      fast::relu_backward(y.size(), y.ptr(), dy.ptr(), dx->ptr());
  }
  double forward_flops(Shape in) const override { return static_cast<double>(in.size()); }
};

class Dropout final : public Layer {
 public:
  Dropout(float rate, std::uint64_t key) : rate_(rate), key_(key) {
    if (!(rate >= 0.0f && rate < 1.0f))
      throw ConfigError("dropout: rate must be in [0, 1), got " + std::to_string(rate));
  }
  std::string name() const override {
    return "dropout" + std::to_string(static_cast<int>(std::lround(rate_ * 100))) + "%";
  }
  Shape output_shape(Shape in) const override { return in; }
  void forward(const Tensor& x, Tensor& y, const Context& ctx) override {
    y.resize(x.n, x.shape);
    active_ = ctx.training && rate_ > 0.0f;
    if (!active_) {
      y.data = x.data;
      return;
    }
    DBS_CHECK(ctx.sample_ids != nullptr);
    mask_.resize(x.size());
    const DropoutKey key{ctx.seed, ctx.epoch, key_};
    if (ctx.reference)
      ref::dropout_forward(x.n, x.shape.size(), rate_, key, ctx.sample_ids, x.ptr(), y.ptr(),
                           mask_.data());
    else
      fast::dropout_forward(x.n, x.shape.size(), rate_, key, ctx.sample_ids, x.ptr(), y.ptr(),
                            mask_.data());
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx,
                const Context& ctx) override {
    if (dx == nullptr) return;
    dx->resize(x.n, x.shape);
    if (!active_) {
      dx->data = dy.data;
      return;
    }
    if (ctx.reference)
      ref::dropout_backward(dy.size(), mask_.data(), dy.ptr(), dx->ptr());
    else
      fast::dropout_backward(dy.size(), mask_.data(), dy.ptr(), dx->ptr());
  }
  double forward_flops(Shape in) const override { return static_cast<double>(in.size()); }

 private:
  float rate_;
  std::uint64_t key_;
  bool active_ = false;      // whether the last forward applied a mask
  std::vector<float> mask_;  // mask of the last forward
};

class Flatten final : public Layer {
 public:
  std::string name() const override { return "flatten"; }
  Shape output_shape(Shape in) const override { return {static_cast<int>(in.size()), 1, 1}; }
  void forward(const Tensor& x, Tensor& y, const Context&) override {
    y.resize(x.n, output_shape(x.shape));
    y.data = x.data;
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx,
                const Context&) override {
    if (dx == nullptr) return;
    dx->resize(x.n, x.shape);
    dx->data = dy.data;
  }
  double forward_flops(Shape) const override { return 0.0; }
};

}  // namespace

std::unique_ptr<Layer> conv2d(int out_channels, int kernel, bool same_padding) {
  return std::make_unique<Conv2d>(out_channels, kernel, same_padding);
}
std::unique_ptr<Layer> maxpool2d(int kernel) {
  return std::make_unique<MaxPool2d>(kernel);
}
std::unique_ptr<Layer> dense(int out_features) {
  return std::make_unique<Dense>(out_features);
}
std::unique_ptr<Layer> relu() {
  return std::make_unique<Relu>();
}
std::unique_ptr<Layer> dropout(float rate, std::uint64_t layer_key) {
  return std::make_unique<Dropout>(rate, layer_key);
}
std::unique_ptr<Layer> flatten() {
  return std::make_unique<Flatten>();
}

}  // namespace dbs::nn
