// resnet: torchvision's ResNet (v1.5: the stride sits on the 3x3 convolution of a bottleneck), on random
// images with a learnable teacher label.
//
// Notation in the shape comments: B batch, C channels, H = W image size.
#include "core/compat.hpp"
#include "models/zoo_common.hpp"
#include <tvie/log.hpp>
#include <tvie/models.hpp>

namespace tvie {
namespace {

// Output size of a convolution or pooling with kernel k, stride s and padding k/2 (torchvision's choice
// for every layer here): floor((size + 2*(k/2) - k) / s) + 1.
int64_t out_size(int64_t size, int64_t k, int64_t stride) { return (size + 2 * (k / 2) - k) / stride + 1; }

int64_t expansion(const ResnetConfig& c) { return c.bottleneck ? 4 : 1; }

// Walks the architecture once; visit_conv(cin, cout, kernel, output size) and visit_bn(channels) are called
// for every layer in the order the module builds them, so that counts and FLOPs follow its structure.
// Returns the channels entering the classifier.
template <typename Conv, typename Bn>
int64_t walk(const ResnetConfig& c, Conv visit_conv, Bn visit_bn) {
  int64_t size = out_size(c.image_size, 7, 2);  // stem: conv 7x7 stride 2
  visit_conv(c.in_channels, c.width, 7, size);
  visit_bn(c.width);
  size = out_size(size, 3, 2);  // max pool 3x3 stride 2
  int64_t channels = c.width;
  for (size_t stage = 0; stage < c.blocks.size(); ++stage) {
    const int64_t planes = c.width << stage;
    const int64_t out_channels = planes * expansion(c);
    for (int64_t block = 0; block < c.blocks[stage]; ++block) {
      const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      const int64_t out = out_size(size, 3, stride);
      if (c.bottleneck) {  // 1x1 reduce, 3x3 (strided), 1x1 expand
        visit_conv(channels, planes, 1, size);
        visit_bn(planes);
        visit_conv(planes, planes, 3, out);
        visit_bn(planes);
        visit_conv(planes, out_channels, 1, out);
        visit_bn(out_channels);
      } else {  // basic: 3x3 (strided), 3x3
        visit_conv(channels, planes, 3, out);
        visit_bn(planes);
        visit_conv(planes, planes, 3, out);
        visit_bn(planes);
      }
      if (stride != 1 || channels != out_channels) {  // downsample: 1x1 strided projection + BN
        visit_conv(channels, out_channels, 1, out);
        visit_bn(out_channels);
      }
      channels = out_channels;
      size = out;
    }
  }
  return channels;
}

}  // namespace

int64_t parameter_count(const ResnetConfig& c) {
  int64_t n = 0;
  const int64_t last = walk(
      c, [&](int64_t cin, int64_t cout, int64_t k, int64_t) { n += cin * cout * k * k; },  // convs have no bias
      [&](int64_t ch) { n += 2 * ch; });                                                   // BN gamma, beta
  return n + last * c.classes + c.classes;                                                 // fc with bias
}

int64_t buffer_bytes(const ResnetConfig& c) {
  int64_t bytes = 0;
  walk(
      c, [](int64_t, int64_t, int64_t, int64_t) {},
      [&](int64_t ch) { bytes += 2 * ch * 4 + 8; });  // running_mean, running_var fp32 + num_batches_tracked int64
  return bytes;
}

double forward_flops_per_sample(const ResnetConfig& c) {
  // 2 FLOPs per multiply-add of every convolution (cin * k^2 per output element) and of the classifier;
  // BatchNorm, ReLU, pooling and the residual additions are not counted (as in the usual 4.1 GMAC figure of
  // ResNet-50 at 224x224: 8.2 GFLOPs).
  double flops = 0;
  const int64_t last = walk(
      c,
      [&](int64_t cin, int64_t cout, int64_t k, int64_t out) {
        flops += 2.0 * static_cast<double>(cin * k * k) * static_cast<double>(cout * out * out);
      },
      [](int64_t) {});
  return flops + 2.0 * static_cast<double>(last * c.classes);
}

namespace {

torch::nn::Conv2d conv(int64_t cin, int64_t cout, int64_t k, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(cin, cout, k).stride(stride).padding(k / 2).bias(false));
}

struct ResBlockImpl : torch::nn::Module {
  ResBlockImpl(const ResnetConfig& c, int64_t cin, int64_t planes, int64_t stride) : bottleneck(c.bottleneck) {
    const int64_t cout = planes * expansion(c);
    if (bottleneck) {
      conv1 = register_module("conv1", conv(cin, planes, 1, 1));
      bn1 = register_module("bn1", torch::nn::BatchNorm2d(planes));
      conv2 = register_module("conv2", conv(planes, planes, 3, stride));
      bn2 = register_module("bn2", torch::nn::BatchNorm2d(planes));
      conv3 = register_module("conv3", conv(planes, cout, 1, 1));
      bn3 = register_module("bn3", torch::nn::BatchNorm2d(cout));
    } else {
      conv1 = register_module("conv1", conv(cin, planes, 3, stride));
      bn1 = register_module("bn1", torch::nn::BatchNorm2d(planes));
      conv2 = register_module("conv2", conv(planes, planes, 3, 1));
      bn2 = register_module("bn2", torch::nn::BatchNorm2d(planes));
    }
    if (stride != 1 || cin != cout) {
      down_conv = register_module("downsample_conv", conv(cin, cout, 1, stride));
      down_bn = register_module("downsample_bn", torch::nn::BatchNorm2d(cout));
    }
  }
  // x: [B, cin, H, W] -> [B, cout, H/stride, W/stride]
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(bn1->forward(conv1->forward(x)));  // [B, planes, H', W'] (basic) or [B, planes, H, W]
    y = bn2->forward(conv2->forward(y));                    // [B, planes, H', W']
    if (bottleneck) y = bn3->forward(conv3->forward(torch::relu(y)));  // [B, 4 planes, H', W']
    auto skip = down_conv ? down_bn->forward(down_conv->forward(x)) : x;
    return torch::relu(y + skip);
  }
  bool bottleneck;
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr}, down_conv{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr}, down_bn{nullptr};
};
TORCH_MODULE(ResBlock);

struct ResnetImpl : torch::nn::Module {
  explicit ResnetImpl(const ResnetConfig& c) {
    stem_conv = register_module("conv1", conv(c.in_channels, c.width, 7, 2));
    stem_bn = register_module("bn1", torch::nn::BatchNorm2d(c.width));
    int64_t channels = c.width;
    for (size_t stage = 0; stage < c.blocks.size(); ++stage) {
      const int64_t planes = c.width << stage;
      for (int64_t block = 0; block < c.blocks[stage]; ++block) {
        const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
        blocks.push_back(register_module(cat("layer", stage + 1, "_", block), ResBlock(c, channels, planes, stride)));
        channels = planes * expansion(c);
      }
    }
    fc = register_module("fc", tvie::nn::Linear(channels, c.classes));
  }
  // x: [B, 3, H, W] -> logits [B, classes]
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(stem_bn->forward(stem_conv->forward(x)));  // [B, width, H/2, W/2]
    x = torch::max_pool2d(x, 3, 2, 1);                         // [B, width, H/4, W/4]
    for (auto& block : blocks) x = block->forward(x);          // [B, 8 width x expansion, H/32, W/32]
    x = x.mean({2, 3});                                        // global average pool: [B, C]
    return fc->forward(x);                                     // [B, classes]
  }
  torch::nn::Conv2d stem_conv{nullptr};
  torch::nn::BatchNorm2d stem_bn{nullptr};
  std::vector<ResBlock> blocks;
  tvie::nn::Linear fc{nullptr};
};

// ResBlockImpl::forward and ResnetImpl::forward on shapes (predict/forward_trace.hpp). `hw`: the input's
// height (= width); convolutions and the max pool give (hw - 1) / stride + 1.
trace::Sym trace_block(trace::ForwardTrace& t, const ResnetConfig& c, const trace::Sym& x, int64_t cin, int64_t planes,
                       int64_t stride, int64_t hw) {
  const int64_t cout = planes * expansion(c), out = (hw - 1) / stride + 1;
  return zoo::trace_residual_block(t, x, cin, cout, stride, out, [&](const trace::Sym& in) {
    if (c.bottleneck) {
      trace::Sym y = t.relu(t.batch_norm(t.conv2d(in, cin, planes, 1, hw), planes));  // [B, planes, H, W]
      y = t.batch_norm(t.conv2d(y, planes, planes, 3, out), planes);                  // [B, planes, H', W']
      return t.batch_norm(t.conv2d(t.relu(y), planes, cout, 1, out), cout);           // [B, 4 planes, H', W']
    }
    const trace::Sym y = t.relu(t.batch_norm(t.conv2d(in, cin, planes, 3, out), planes));
    return t.batch_norm(t.conv2d(y, planes, planes, 3, out), planes);
  });
}

trace::Sym trace_resnet(trace::ForwardTrace& t, const ResnetConfig& c) {
  int64_t hw = c.image_size;
  trace::Sym x = t.input(t.batch() * c.in_channels * hw * hw, t.weight_bytes());
  hw = (hw - 1) / 2 + 1;
  x = t.relu(t.batch_norm(t.conv2d(x, c.in_channels, c.width, 7, hw), c.width));  // [B, width, H/2, W/2]
  hw = (hw - 1) / 2 + 1;
  x = t.max_pool2d(x, t.batch() * c.width * hw * hw);  // [B, width, H/4, W/4]
  int64_t channels = c.width;
  for (size_t stage = 0; stage < c.blocks.size(); ++stage) {
    const int64_t planes = c.width << stage;
    for (int64_t block = 0; block < c.blocks[stage]; ++block) {
      const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      x = trace_block(t, c, x, channels, planes, stride, hw);
      hw = (hw - 1) / stride + 1;
      channels = planes * expansion(c);
    }
  }
  x = t.mean_pool(x, t.batch() * channels);  // [B, C]
  return t.linear(x, channels, c.classes, true);
}

using ResnetWorkload = zoo::ImageClassifierWorkload<ResnetImpl, ResnetConfig, trace_resnet>;

}  // namespace

std::unique_ptr<Workload> make_resnet_workload(const ResnetConfig& config, std::string label) {
  return std::make_unique<ResnetWorkload>(config, std::move(label));
}

}  // namespace tvie
