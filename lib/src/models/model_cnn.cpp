// cnn: a small ResNet (basic blocks with BatchNorm) classifying random images.
#include "core/compat.hpp"
#include "models/zoo_common.hpp"
#include <tvie/log.hpp>
#include <tvie/models.hpp>

namespace tvie {
namespace {

// Output size of a 3x3 convolution with padding 1 (and of the 1x1 shortcut): ceil(size / stride).
int64_t conv_out(int64_t size, int64_t stride) { return (size + stride - 1) / stride; }

// Walks the architecture once; `visit_conv(cin, cout, kernel, out_size)` and `visit_bn(channels)` are
// called for every layer, so that counts and FLOPs follow the very structure the module builds.
template <typename Conv, typename Bn>
int64_t walk(const CnnConfig& c, Conv visit_conv, Bn visit_bn) {
  int64_t size = c.image_size, channels = c.width;
  visit_conv(c.in_channels, c.width, 3, size);  // stem
  visit_bn(c.width);
  for (int64_t stage = 0; stage < c.stages; ++stage) {
    const int64_t out_channels = c.width << stage;
    for (int64_t block = 0; block < c.blocks_per_stage; ++block) {
      const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      const int64_t out_size = conv_out(size, stride);
      visit_conv(channels, out_channels, 3, out_size);
      visit_bn(out_channels);
      visit_conv(out_channels, out_channels, 3, out_size);
      visit_bn(out_channels);
      if (stride != 1 || channels != out_channels) {  // projection shortcut
        visit_conv(channels, out_channels, 1, out_size);
        visit_bn(out_channels);
      }
      channels = out_channels;
      size = out_size;
    }
  }
  return channels;  // channels entering the classifier
}

}  // namespace

int64_t parameter_count(const CnnConfig& c) {
  int64_t n = 0;
  const int64_t last = walk(
      c, [&](int64_t cin, int64_t cout, int64_t k, int64_t) { n += cin * cout * k * k; },  // conv, no bias
      [&](int64_t ch) { n += 2 * ch; });                                                   // BN gamma, beta
  return n + last * c.classes + c.classes;
}

int64_t buffer_bytes(const CnnConfig& c) {
  int64_t bytes = 0;
  walk(
      c, [](int64_t, int64_t, int64_t, int64_t) {},
      [&](int64_t ch) { bytes += 2 * ch * 4 + 8; });  // running_mean, running_var fp32 + num_batches_tracked int64
  return bytes;
}

double forward_flops_per_sample(const CnnConfig& c) {
  double flops = 0;
  const int64_t last = walk(
      c,
      [&](int64_t cin, int64_t cout, int64_t k, int64_t out) {
        flops += 2.0 * static_cast<double>(cin * cout * k * k * out * out);
      },
      [](int64_t) {});
  return flops + 2.0 * static_cast<double>(last * c.classes);
}

namespace {

torch::nn::Conv2d conv(int64_t cin, int64_t cout, int64_t k, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(cin, cout, k).stride(stride).padding(k / 2).bias(false));
}

struct BasicBlockImpl : torch::nn::Module {
  BasicBlockImpl(int64_t cin, int64_t cout, int64_t stride)
      : conv1(register_module("conv1", conv(cin, cout, 3, stride))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(cout))),
        conv2(register_module("conv2", conv(cout, cout, 3, 1))),
        bn2(register_module("bn2", torch::nn::BatchNorm2d(cout))) {
    if (stride != 1 || cin != cout) {
      shortcut_conv = register_module("shortcut_conv", conv(cin, cout, 1, stride));
      shortcut_bn = register_module("shortcut_bn", torch::nn::BatchNorm2d(cout));
    }
  }
  // x: [B, cin, H, W] -> [B, cout, H/stride, W/stride]
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(bn1->forward(conv1->forward(x)));  // [B, cout, H', W']
    y = bn2->forward(conv2->forward(y));                    // [B, cout, H', W']
    auto skip = shortcut_conv ? shortcut_bn->forward(shortcut_conv->forward(x)) : x;
    return torch::relu(y + skip);
  }
  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d conv2;
  torch::nn::BatchNorm2d bn2;
  torch::nn::Conv2d shortcut_conv{nullptr};
  torch::nn::BatchNorm2d shortcut_bn{nullptr};
};
TORCH_MODULE(BasicBlock);

struct CnnImpl : torch::nn::Module {
  explicit CnnImpl(const CnnConfig& c) {
    stem_conv = register_module("stem_conv", conv(c.in_channels, c.width, 3, 1));
    stem_bn = register_module("stem_bn", torch::nn::BatchNorm2d(c.width));
    int64_t channels = c.width;
    for (int64_t stage = 0; stage < c.stages; ++stage) {
      const int64_t out = c.width << stage;
      for (int64_t block = 0; block < c.blocks_per_stage; ++block) {
        const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
        blocks.push_back(register_module(cat("stage", stage, "_block", block), BasicBlock(channels, out, stride)));
        channels = out;
      }
    }
    fc = register_module("fc", tvie::nn::Linear(channels, c.classes));
  }
  // x: [B, 3, H, W] -> logits [B, classes]
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(stem_bn->forward(stem_conv->forward(x)));  // [B, width, H, W]
    for (auto& block : blocks) x = block->forward(x);          // [B, width * 2^(stages-1), H', W']
    x = x.mean({2, 3});                                        // global average pool: [B, C]
    return fc->forward(x);                                     // [B, classes]
  }
  torch::nn::Conv2d stem_conv{nullptr};
  torch::nn::BatchNorm2d stem_bn{nullptr};
  std::vector<BasicBlock> blocks;
  tvie::nn::Linear fc{nullptr};
};

// BasicBlockImpl::forward and CnnImpl::forward on shapes (predict/forward_trace.hpp). `hw`: the input's
// height (= width); a convolution of stride s (padding k/2) gives (hw - 1) / s + 1.
trace::Sym trace_basic_block(trace::ForwardTrace& t, const trace::Sym& x, int64_t cin, int64_t cout, int64_t stride,
                             int64_t hw) {
  const int64_t out = (hw - 1) / stride + 1;
  return zoo::trace_residual_block(t, x, cin, cout, stride, out, [&](const trace::Sym& in) {
    const trace::Sym y = t.relu(t.batch_norm(t.conv2d(in, cin, cout, 3, out), cout));
    return t.batch_norm(t.conv2d(y, cout, cout, 3, out), cout);  // [B, cout, out, out]
  });
}

trace::Sym trace_cnn(trace::ForwardTrace& t, const CnnConfig& c) {
  int64_t hw = c.image_size, channels = c.width;
  trace::Sym x = t.input(t.batch() * c.in_channels * hw * hw, t.weight_bytes());
  x = t.relu(t.batch_norm(t.conv2d(x, c.in_channels, c.width, 3, hw), c.width));  // [B, width, H, W]
  for (int64_t stage = 0; stage < c.stages; ++stage) {
    const int64_t out = c.width << stage;
    for (int64_t block = 0; block < c.blocks_per_stage; ++block) {
      const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      x = trace_basic_block(t, x, channels, out, stride, hw);
      hw = (hw - 1) / stride + 1;
      channels = out;
    }
  }
  x = t.mean_pool(x, t.batch() * channels);  // [B, C]
  return t.linear(x, channels, c.classes, true);
}

using CnnWorkload = zoo::ImageClassifierWorkload<CnnImpl, CnnConfig, trace_cnn>;

}  // namespace

std::unique_ptr<Workload> make_cnn_workload(const CnnConfig& config, std::string label) {
  return std::make_unique<CnnWorkload>(config, std::move(label));
}

}  // namespace tvie
