// What oneDNN books for a convolution's three training primitives when asked as LibTorch 2.14's ideep asks
// (ideep/operators/conv.hpp, for an NCHW input that is not channels-last):
//  - forward: source, weights and destination in format "any" (oneDNN picks the layouts), prop_kind forward
//    (training), a user scratchpad;
//  - backward data and backward weights: "any" again, the forward (format "any") as the hint, a user scratchpad.
// Nothing is executed: the primitive descriptors say which kernel would run, the layouts it wants and the bytes of
// its scratchpad. Built by research/kernel-scratch/onednn-bookings/build.sh against a oneDNN at LibTorch's commit.
//
// Usage (a matmul mode below): `probe version` prints oneDNN's version and commit; probe [bf16|f32] < shapes, one convolution per line: "batch cin cout kernel stride hw" (square images and
// kernels, padding kernel / 2, no bias). Prints per line the shape, then for each primitive (F, D, W) its kernel and
// every tensor's bytes in the layout oneDNN wants, suffixed 'p' when that layout is the plain one LibTorch holds
// (NCHW / OIHW: no reorder), 'c' when it is channels-last (a public layout that LibTorch's mkldnn_to_dense keeps and
// then copies to NCHW), and its scratchpad's bytes (s=).
#include <cstdio>
#include <cstring>

#include "oneapi/dnnl/dnnl.hpp"

using namespace dnnl;
using tag = memory::format_tag;

namespace {

long bytes(const memory::desc& d) { return static_cast<long>(d.get_size()); }

const char* layout(const memory::desc& d, const memory::desc& plain) {
  if (d == plain) return "p";
  const memory::desc channels_last(plain.get_dims(), plain.get_data_type(), tag::acdb);
  return d == channels_last ? "c" : "";
}

}  // namespace

// `probe matmul < shapes`: a bf16 matmul c[M, N] = a[M, K] b[K, N] per line, "M K N a_tag b_tag sum", the tags
// "ab" (row-major) or "ba" (the transpose of a row-major tensor) as ONEDNN_VERBOSE shows LibTorch's calls, sum 1
// where LibTorch adds into c (a Linear's bias: a sum post-op). Prints the kernel and the scratchpad's bytes.
int probe_matmul(const engine& eng) {
  long M, K, N, sum;
  char at[8], bt[8];
  while (std::scanf("%ld %ld %ld %7s %7s %ld", &M, &K, &N, at, bt, &sum) == 6) {
    const auto tag_of = [](const char* t) { return std::strcmp(t, "ba") == 0 ? tag::ba : tag::ab; };
    const memory::desc a({M, K}, memory::data_type::bf16, tag_of(at)), b({K, N}, memory::data_type::bf16, tag_of(bt));
    const memory::desc c({M, N}, memory::data_type::bf16, tag::ab);
    primitive_attr attr;
    attr.set_scratchpad_mode(scratchpad_mode::user);
    if (sum != 0) {
      post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    std::printf("%ld %ld %ld %s %s %ld", M, K, N, at, bt, sum);
    try {
      const dnnl::matmul::primitive_desc pd(eng, a, b, c, attr);
      std::printf(" | M %s s=%ld\n", pd.impl_info_str(), bytes(pd.scratchpad_desc()));
    } catch (const dnnl::error& e) {
      std::printf(" | error %s\n", e.what());
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "version") == 0) {
    const dnnl_version_t* v = dnnl::version();
    std::printf("v%d.%d.%d (commit %s)\n", v->major, v->minor, v->patch, v->hash);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "matmul") == 0) return probe_matmul(engine(engine::kind::cpu, 0));
  const bool f32 = argc > 1 && std::strcmp(argv[1], "f32") == 0;
  const memory::data_type dt = f32 ? memory::data_type::f32 : memory::data_type::bf16;
  const engine eng(engine::kind::cpu, 0);
  long B, cin, cout, k, s, hw;
  while (std::scanf("%ld %ld %ld %ld %ld %ld", &B, &cin, &cout, &k, &s, &hw) == 6) {
    const long pad = k / 2, ohw = (hw + 2 * pad - k) / s + 1;
    const memory::dims src{B, cin, hw, hw}, wei{cout, cin, k, k}, dst{B, cout, ohw, ohw};
    const memory::desc src_any(src, dt, tag::any), wei_any(wei, dt, tag::any), dst_any(dst, dt, tag::any);
    const memory::desc src_p(src, dt, tag::nchw), wei_p(wei, dt, tag::oihw), dst_p(dst, dt, tag::nchw);
    primitive_attr attr;
    attr.set_scratchpad_mode(scratchpad_mode::user);
    // LibTorch passes the padding on both sides (k / 2) and oneDNN's dilation counts from 0.
    const memory::dims stride{s, s}, dilation{0, 0}, padding{pad, pad};
    std::printf("%ld %ld %ld %ld %ld %ld", B, cin, cout, k, s, hw);
    try {
      const auto algo = algorithm::convolution_direct;
      const convolution_forward::primitive_desc f(eng, prop_kind::forward_training, algo, src_any, wei_any, dst_any,
                                                  stride, dilation, padding, padding, attr);
      const convolution_forward::primitive_desc hint(eng, prop_kind::forward_training, algo, src_any, wei_any,
                                                     dst_any, stride, dilation, padding, padding);
      const convolution_backward_data::primitive_desc d(eng, algo, src_any, wei_any, dst_any, stride, dilation,
                                                        padding, padding, hint, attr);
      const convolution_backward_weights::primitive_desc w(eng, algo, src_any, wei_any, dst_any, stride, dilation,
                                                           padding, padding, hint, attr);
      std::printf(" | F %s x=%ld%s w=%ld%s y=%ld%s s=%ld", f.impl_info_str(), bytes(f.src_desc()),
                  layout(f.src_desc(), src_p), bytes(f.weights_desc()), layout(f.weights_desc(), wei_p),
                  bytes(f.dst_desc()), layout(f.dst_desc(), dst_p), bytes(f.scratchpad_desc()));
      std::printf(" | D %s dy=%ld%s w=%ld%s dx=%ld%s s=%ld", d.impl_info_str(), bytes(d.diff_dst_desc()),
                  layout(d.diff_dst_desc(), dst_p), bytes(d.weights_desc()), layout(d.weights_desc(), wei_p),
                  bytes(d.diff_src_desc()), layout(d.diff_src_desc(), src_p), bytes(d.scratchpad_desc()));
      std::printf(" | W %s x=%ld%s dy=%ld%s dw=%ld%s s=%ld\n", w.impl_info_str(), bytes(w.src_desc()),
                  layout(w.src_desc(), src_p), bytes(w.diff_dst_desc()), layout(w.diff_dst_desc(), dst_p),
                  bytes(w.diff_weights_desc()), layout(w.diff_weights_desc(), wei_p), bytes(w.scratchpad_desc()));
    } catch (const dnnl::error& e) {
      std::printf(" | error %s\n", e.what());
    }
  }
}
