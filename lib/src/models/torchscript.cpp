// TorchScript workload. See torchscript.hpp.
#include <tvie/torchscript.hpp>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/script.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/compat.hpp"
#include "core/enum_names.hpp"
#include "core/text.hpp"
#include "models/zoo_common.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {
namespace {

// An nn::Module view of a script module: it registers the script module's own parameter and buffer
// tensors (the same tensors, not copies), so that tvie's device/dtype conversion, weight copies and
// optimizers act on what the script module computes with.
class ScriptModuleImpl : public torch::nn::Module {
 public:
  explicit ScriptModuleImpl(torch::jit::Module m) : script(std::move(m)) {
    for (const auto& p : script.named_parameters(/*recurse=*/true))
      register_parameter(flat_name(p.name), p.value, /*requires_grad=*/true);  // script parameters are trainable
    for (const auto& b : script.named_buffers(/*recurse=*/true)) register_buffer(flat_name(b.name), b.value);
  }

  void train(bool on = true) override {
    torch::nn::Module::train(on);
    script.train(on);
  }

  torch::jit::Module script;

  // The storages the script module computes with: tensor constants of its graphs (frozen weights) and its
  // tensor attributes (parameters and buffers included), by data pointer with their bytes.
  std::map<const void*, int64_t> script_weight_storages() const {
    std::map<const void*, int64_t> storages;
    auto add = [&](const torch::Tensor& t) {
      if (!t.defined()) return;
      if (t.is_mkldnn())  // optimize_for_inference's oneDNN weights: opaque, no storage; their elements
        storages[t.unsafeGetTensorImpl()] = static_cast<int64_t>(t.numel() * t.element_size());
      else if (t.has_storage() && t.storage().nbytes() > 0)
        storages[t.storage().data()] = static_cast<int64_t>(t.storage().nbytes());
    };
    static const auto mkldnn_constant = c10::Symbol::fromQualString("prim::ConstantMKLDNNTensor");
    for (const auto& method : script.get_methods())
      for (const auto* node : method.graph()->nodes())
        if ((node->kind() == c10::prim::Constant || node->kind() == mkldnn_constant) &&
            node->hasAttribute(c10::attr::value) && node->kindOf(c10::attr::value) == torch::jit::AttributeKind::t)
          add(node->t(c10::attr::value));
    for (const auto& a : script.named_attributes(/*recurse=*/true))
      if (a.value.isTensor()) add(a.value.toTensor());
    return storages;
  }

  // After freezing, the graph holds its weights as constants (copies, folded or not); the tensors this
  // view registered would keep the unfrozen weights alive too. Empties those no constant, attribute or
  // parameter of the frozen module still uses, so that the ledger measures what a deployment keeps.
  void release_unused_weights() {
    std::set<const void*> used;
    for (const auto& [data, bytes] : script_weight_storages()) used.insert(data);
    torch::NoGradGuard no_grad;
    for (const auto& tensors : {parameters(), buffers()})
      for (const auto& t : tensors)
        if (t.defined() && t.numel() > 0 && used.count(t.storage().data()) == 0)
          t.set_data(torch::empty({0}, t.options()));
  }

 private:
  static std::string flat_name(std::string name) {  // nn::Module names may not contain '.'
    for (auto& c : name)
      if (c == '.') c = '_';
    return name;
  }
};

torch::jit::Module load_script(const std::string& path) {
  try {
    return torch::jit::load(path, torch::kCPU);
  } catch (const c10::Error& e) {
    throw InvalidArgument("torchscript.path", path,
                          cat("a file saved by torch.jit.save (", detail::first_line(e.what_without_backtrace()), ")"));
  }
}

// The line of a TorchScript interpreter error that says what went wrong ("RuntimeError: ..."), else its
// first line (the rest is the TorchScript and C++ traceback).
std::string script_error_line(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  std::string line, found;
  for (std::istringstream in(text); std::getline(in, line);)
    if (found.empty() && line.find("Error: ") != std::string::npos) found = line;
  return found.empty() ? detail::first_line(text) : found;
}

class TorchScriptWorkload final : public Workload {
 public:
  explicit TorchScriptWorkload(TorchScriptSettings s) : s_(std::move(s)) {
    auto m = load_script(s_.path);
    check_forward(m);
    count_flops(m);
    for (const auto& p : m.parameters()) facts_.parameter_count += p.numel();
    for (const auto& b : m.buffers()) facts_.buffer_bytes += static_cast<int64_t>(b.nbytes());
    if (s_.token_input && !s_.input_shape.empty()) facts_.tokens_per_sample = s_.input_shape.back();
    std::string base = s_.path;
    if (const auto slash = base.find_last_of('/'); slash != std::string::npos) base = base.substr(slash + 1);
    name_ = cat("script:", base);
    if (s_.fusion != ScriptFusion::none) name_ += cat(" (", to_string(s_.fusion), ")");
  }

  std::string name() const override { return name_; }

  std::shared_ptr<torch::nn::Module> make_module() const override {
    return std::make_shared<ScriptModuleImpl>(load_script(s_.path));
  }

  torch::Tensor forward(torch::nn::Module& module, const torch::Tensor& input) const override {
    return static_cast<ScriptModuleImpl&>(module).script.forward({input}).toTensor();
  }

  Batch make_batch(int64_t batch_size, const c10::Device& device, uint64_t seed) const override {
    auto gen = zoo::data_generator(seed);
    std::vector<int64_t> shape{batch_size};
    shape.insert(shape.end(), s_.input_shape.begin(), s_.input_shape.end());
    Batch b;
    b.input = s_.token_input ? torch::randint(0, s_.vocab_size, shape, gen, torch::kInt64)
                             : torch::randn(shape, gen, torch::kFloat32);
    b.input = b.input.to(device);
    b.target = torch::zeros({batch_size}, torch::TensorOptions(device));  // unused by the synthetic loss
    b.samples = batch_size;
    b.tokens = facts_.tokens_per_sample * batch_size;
    return b;
  }

  // Synthetic: the mean square of the output (a scalar per batch, mean over samples).
  torch::Tensor loss(const torch::Tensor& output, const Batch& batch) const override {
    (void)batch;
    return output.to(torch::kFloat32).pow(2).mean();
  }

  ModelFacts facts() const override { return facts_; }

  // One forward of a batch of 2 of the declared shape, before any run: a model that rejects the shape, or
  // whose forward does not return one tensor with the batch first, is refused here with one line.
  void check_forward(torch::jit::Module& m) const {
    m.eval();
    c10::InferenceMode guard;
    c10::IValue out;
    try {
      out = m.forward({make_batch(2, c10::Device(c10::kCPU), 0).input});
    } catch (const std::exception& e) {
      throw InvalidArgument(
          "torchscript.input_shape", detail::shape_text(s_.input_shape),
          cat("a shape the model's forward accepts (a batch of 2 of this shape failed: ", script_error_line(e), ")"));
    }
    if (!out.isTensor())
      throw InvalidArgument("torchscript.path", s_.path,
                            cat("a module whose forward returns one tensor (this one returns ", out.tagKind(), ")"));
    if (out.toTensor().dim() == 0 || out.toTensor().size(0) != 2)
      throw InvalidArgument("torchscript.input_shape", detail::shape_text(s_.input_shape),
                            cat("a shape for which the output's first dimension is the batch (a batch of 2 gave ",
                                out.toTensor().sizes(), ")"));
  }

  // The weights exactly: the bytes of the storages the script module computes with. What the loader leaves
  // alive besides them (its deserialisation tables, code) is not weights, and shows in `other`.
  int64_t inference_weight_bytes(const torch::nn::Module& module) const override {
    int64_t bytes = 0;
    for (const auto& [data, n] : static_cast<const ScriptModuleImpl&>(module).script_weight_storages()) bytes += n;
    return bytes;
  }

  // Forward FLOPs per sample from LibTorch's profiler (with_flops) over one forward of a batch of 2: the
  // matrix products and convolutions only (2 FLOPs per multiply-add, tvie's convention; element-wise ops
  // are left out, as in the zoo's analytic counts). Where the profiler cannot run, 0 and the reason.
  void count_flops(torch::jit::Module& m) {
    namespace prof = torch::autograd::profiler;
    namespace impl = torch::profiler::impl;
    static const std::set<std::string> counted = {"aten::mm",     "aten::addmm",  "aten::bmm",   "aten::baddbmm",
                                                  "aten::conv2d", "aten::conv1d", "aten::conv3d"};
    compat::quiet_kineto();
    try {
      const auto input = make_batch(2, c10::Device(c10::kCPU), 0).input;
      impl::ProfilerConfig config(impl::ProfilerState::KINETO, /*report_input_shapes=*/true,
                                  /*profile_memory=*/false, /*with_stack=*/false, /*with_flops=*/true);
      prof::prepareProfiler(config, {impl::ActivityType::CPU});
      prof::enableProfiler(config, {impl::ActivityType::CPU});
      {
        c10::InferenceMode guard;
        m.forward({input});
      }
      const auto result = prof::disableProfiler();
      double flops = 0;
      std::set<std::string> seen;
      for (const auto& e : result->events())
        if (counted.count(e.name()) && e.flops() > 0) {
          flops += static_cast<double>(e.flops());
          seen.insert(e.name());
        }
      facts_.forward_flops_per_sample = flops / 2;
      std::vector<std::string> names(seen.begin(), seen.end());
      facts_.flops_source =
          cat("profiler: ", names.empty() ? "no matrix product or convolution found" : detail::join(names));
    } catch (const std::exception& e) {
      facts_.forward_flops_per_sample = 0;
      facts_.flops_source = cat("not counted: the profiler failed (", detail::first_line(e.what()), ")");
    }
  }

  void prepare_inference(torch::nn::Module& module) const override {
    auto& m = static_cast<ScriptModuleImpl&>(module);
    m.script.eval();
    if (s_.fusion == ScriptFusion::none) return;
    auto frozen = torch::jit::freeze(m.script);
    if (s_.fusion == ScriptFusion::optimize) frozen = torch::jit::optimize_for_inference(frozen);
    m.script = frozen;
    m.release_unused_weights();
  }

 private:
  TorchScriptSettings s_;
  std::string name_;
  ModelFacts facts_;
};

}  // namespace

namespace {
constexpr detail::EnumTable<ScriptFusion, 3> kFusions{
    {{ScriptFusion::none, "none"}, {ScriptFusion::freeze, "freeze"}, {ScriptFusion::optimize, "optimize"}}};
}  // namespace

std::string to_string(ScriptFusion fusion) { return detail::name_of(kFusions, fusion); }

ScriptFusion parse_script_fusion(const std::string& text, const std::string& field) {
  return detail::parse(kFusions, text, field,
                       "none, freeze (torch::jit::freeze), optimize (freeze + optimize_for_inference)");
}

void validate(const TorchScriptSettings& s) {
  if (s.path.empty() || !std::ifstream(s.path).good())
    throw InvalidArgument("torchscript.path", s.path, "a readable file saved by torch.jit.save");
  if (s.input_shape.empty())
    throw InvalidArgument("torchscript.input_shape", "",
                          "one sample's shape without the batch dimension, e.g. 3,32,32");
  for (int64_t d : s.input_shape)
    if (d < 1) throw InvalidArgument("torchscript.input_shape", cat(d), "dimensions >= 1");
  if (s.token_input && s.vocab_size < 1)
    throw InvalidArgument("torchscript.vocab_size", cat(s.vocab_size), "an integer >= 1 (token inputs need it)");
}

std::unique_ptr<Workload> make_torchscript_workload(const TorchScriptSettings& settings) {
  validate(settings);
  return std::make_unique<TorchScriptWorkload>(settings);
}

}  // namespace tvie
