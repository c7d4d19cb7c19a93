#include "lib/nn/model.h"

#include <sstream>
#include <utility>

#include "lib/common/error.h"

namespace dbs::nn {

Model::Model(std::string name, Shape input, std::vector<std::unique_ptr<Layer>> layers,
             std::uint64_t seed)
    : name_(std::move(name)), input_(input), layers_(std::move(layers)) {
  DBS_CHECK(!layers_.empty());
  shapes_.push_back(input_);
  std::size_t total = 0;
  for (const auto& l : layers_) {
    offsets_.push_back(total);
    total += l->param_count(shapes_.back());
    shapes_.push_back(l->output_shape(shapes_.back()));
  }
  params_.assign(total, 0.0f);
  grads_.assign(total, 0.0f);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->bind(shapes_[i], params_.data() + offsets_[i], grads_.data() + offsets_[i]);
    layers_[i]->init(seed, i);
  }
  acts_.resize(layers_.size() + 1);
}

const Tensor& Model::forward(const float* x, int n, const Context& ctx) {
  acts_[0].resize(n, input_);
  std::copy(x, x + acts_[0].size(), acts_[0].data.begin());
  for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i]->forward(acts_[i], acts_[i + 1], ctx);
  return acts_.back();
}

void Model::backward(const float* dlogits, const Context& ctx, const LayerDone& done) {
  const Tensor& out = acts_.back();
  Tensor* dy = &grad_a_;
  Tensor* dx = &grad_b_;
  dy->resize(out.n, out.shape);
  std::copy(dlogits, dlogits + out.size(), dy->data.begin());
  for (std::size_t i = layers_.size(); i-- > 0;) {
    layers_[i]->backward(acts_[i], acts_[i + 1], *dy, i == 0 ? nullptr : dx, ctx);
    if (done) done(i);
    std::swap(dy, dx);
  }
}

double Model::loss_and_grads(const float* x, const std::int32_t* labels, int n, const Context& ctx,
                             int* correct, const LayerDone& done) {
  const Tensor& logits = forward(x, n, ctx);
  dlogits_.resize(n, logits.shape);
  const double loss =
      ctx.reference
          ? ref::softmax_xent(n, classes(), logits.ptr(), labels, dlogits_.ptr(), correct)
          : fast::softmax_xent(n, classes(), logits.ptr(), labels, dlogits_.ptr(), correct);
  backward(dlogits_.ptr(), ctx, done);
  return loss;
}

double Model::forward_flops_per_sample() const {
  double f = 0.0;
  for (std::size_t i = 0; i < layers_.size(); ++i) f += layers_[i]->forward_flops(shapes_[i]);
  return f;
}

double Model::train_flops_per_sample() const {
  double f = 0.0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const double fwd = layers_[i]->forward_flops(shapes_[i]);
    const bool has_weights = layers_[i]->param_count(shapes_[i]) > 0;
    // Backward: dw costs one forward, dx another (skipped by the first layer).
    const double bwd = has_weights ? (i == 0 ? fwd : 2.0 * fwd) : fwd;
    f += fwd + bwd;
  }
  return f;
}

std::vector<Model::LayerInfo> Model::layers_info() const {
  std::vector<LayerInfo> out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    out.push_back(
        {layers_[i]->name(), shapes_[i], shapes_[i + 1], layers_[i]->param_count(shapes_[i])});
  return out;
}

std::string Model::summary() const {
  std::ostringstream os;
  os << name_ << " on " << input_.str() << ":\n";
  for (const auto& l : layers_info())
    os << "  " << l.name << "  " << l.in.str() << " -> " << l.out.str() << "  " << l.params
       << " params\n";
  os << "  total " << param_count() << " params, " << forward_flops_per_sample() / 1e6
     << " MFLOP forward per sample";
  return os.str();
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"cnn", "lenet"};
  return names;
}

std::unique_ptr<Model> make_model(const std::string& name, Shape input, int classes,
                                  std::uint64_t seed) {
  std::vector<std::unique_ptr<Layer>> l;
  if (name == "cnn") {
    for (int ch : {32, 128, 256}) {
      l.push_back(conv2d(ch, 3, false));
      l.push_back(relu());
      l.push_back(maxpool2d(2));
    }
    l.push_back(flatten());
    l.push_back(dropout(0.25f, 1));
    l.push_back(dense(1000));
    l.push_back(relu());
    l.push_back(dense(100));
    l.push_back(relu());
    l.push_back(dense(classes));
  } else if (name == "lenet") {
    l.push_back(conv2d(6, 5, true));
    l.push_back(relu());
    l.push_back(maxpool2d(2));
    l.push_back(conv2d(16, 5, false));
    l.push_back(relu());
    l.push_back(maxpool2d(2));
    l.push_back(flatten());
    l.push_back(dropout(0.25f, 1));
    l.push_back(dense(64));
    l.push_back(relu());
    l.push_back(dense(classes));
  } else {
    throw ConfigError("unknown model '" + name + "' (known: cnn, lenet)");
  }
  return std::make_unique<Model>(name, input, std::move(l), seed);
}

}  // namespace dbs::nn
