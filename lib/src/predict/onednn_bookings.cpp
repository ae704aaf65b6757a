// oneDNN's own bookings, asked of the oneDNN inside LibTorch (see onednn_bookings.hpp).
#include "predict/onednn_bookings.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/text.hpp"
#include <tvie/log.hpp>

#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <oneapi/dnnl/dnnl.h>
#define TVIE_HAVE_DNNL_HEADER 1
#else
#define TVIE_HAVE_DNNL_HEADER 0
#endif

namespace tvie::trace::onednn {

namespace {
// `compute(key)`'s value, computed once per key and remembered (a model's trace asks the same few shapes once per
// layer, each asking oneDNN for a primitive descriptor). One table per call site (each passes its own lambda).
template <typename Key, typename Compute>
auto remembered(const Key& key, Compute compute) {
  using Value = decltype(compute(key));
  static std::mutex mutex;
  static std::map<Key, Value> known;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = known.find(key); it != known.end()) return it->second;
  }
  Value value = compute(key);
  std::lock_guard<std::mutex> lock(mutex);
  known.emplace(key, value);
  return value;
}
}  // namespace

#if TVIE_HAVE_DNNL_HEADER
namespace {

// The C API functions used here, by name; their types are the public header's.
// clang-format off
#define TVIE_DNNL_FUNCTIONS(X) \
  X(dnnl_version) \
  X(dnnl_engine_create) \
  X(dnnl_memory_desc_create_with_tag) \
  X(dnnl_memory_desc_destroy) \
  X(dnnl_memory_desc_get_size) \
  X(dnnl_memory_desc_equal) \
  X(dnnl_primitive_attr_create) \
  X(dnnl_primitive_attr_destroy) \
  X(dnnl_primitive_attr_set_scratchpad_mode) \
  X(dnnl_primitive_attr_set_post_ops) \
  X(dnnl_post_ops_create) \
  X(dnnl_post_ops_append_sum) \
  X(dnnl_post_ops_destroy) \
  X(dnnl_convolution_forward_primitive_desc_create) \
  X(dnnl_convolution_backward_data_primitive_desc_create) \
  X(dnnl_convolution_backward_weights_primitive_desc_create) \
  X(dnnl_matmul_primitive_desc_create) \
  X(dnnl_primitive_desc_query_md) \
  X(dnnl_primitive_desc_query) \
  X(dnnl_primitive_desc_destroy)
// clang-format on

struct Api {
#define TVIE_DNNL_MEMBER(f) decltype(&::f) f = nullptr;
  TVIE_DNNL_FUNCTIONS(TVIE_DNNL_MEMBER)
#undef TVIE_DNNL_MEMBER
  dnnl_engine_t engine = nullptr;
  std::string source;  // how the functions were found, or why not (then `engine` is null)
};

// The loaded libtorch_cpu.so: its path and the address it was loaded at.
struct LoadedLibrary {
  std::string path;
  uintptr_t base = 0;
};

LoadedLibrary find_torch_cpu() {
  LoadedLibrary lib;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (!name.ends_with("/libtorch_cpu.so")) return 0;
        auto* out = static_cast<LoadedLibrary*>(data);
        out->path = std::string(name);
        out->base = info->dlpi_addr;
        return 1;
      },
      &lib);
  return lib;
}

// The addresses of `wanted` functions in the library's symbol table (.symtab, which the wheels keep; the dynamic
// one does not list oneDNN's functions, which LibTorch hides). A name defined twice is not taken. Says why in `why`
// when the table cannot be read.
std::unordered_map<std::string_view, void*> functions_in_symbol_table(const LoadedLibrary& lib,
                                                                      const std::vector<std::string_view>& wanted,
                                                                      std::string& why) {
  std::unordered_map<std::string_view, void*> found;
  const int fd = ::open(lib.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    why = cat("cannot open ", lib.path);
    return found;
  }
  struct stat st {};
  void* map = ::fstat(fd, &st) == 0 ? ::mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (map == MAP_FAILED) {
    why = cat("cannot map ", lib.path);
    return found;
  }
  const auto* bytes = static_cast<const unsigned char*>(map);
  const auto size = static_cast<size_t>(st.st_size);
  const auto within = [&](size_t offset, size_t length) { return offset <= size && length <= size - offset; };
  std::unordered_map<std::string_view, int> seen;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(bytes);
  if (!within(0, sizeof(Elf64_Ehdr)) || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
      !within(eh->e_shoff, size_t(eh->e_shnum) * sizeof(Elf64_Shdr))) {
    why = cat(lib.path, " is not a 64-bit ELF file tvie can read");
  } else {
    const auto* sections = reinterpret_cast<const Elf64_Shdr*>(bytes + eh->e_shoff);
    const Elf64_Shdr* symtab = nullptr;
    for (int i = 0; i < eh->e_shnum; ++i)
      if (sections[i].sh_type == SHT_SYMTAB) symtab = &sections[i];
    if (symtab == nullptr || symtab->sh_link >= eh->e_shnum) {
      why = cat(lib.path, " has no symbol table (stripped)");
    } else {
      const Elf64_Shdr& strtab = sections[symtab->sh_link];
      if (within(symtab->sh_offset, symtab->sh_size) && within(strtab.sh_offset, strtab.sh_size)) {
        const auto* symbols = reinterpret_cast<const Elf64_Sym*>(bytes + symtab->sh_offset);
        const char* names = reinterpret_cast<const char*>(bytes + strtab.sh_offset);
        for (size_t i = 0; i < symtab->sh_size / sizeof(Elf64_Sym); ++i) {
          const Elf64_Sym& s = symbols[i];
          if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF || s.st_name >= strtab.sh_size) continue;
          const char* name = names + s.st_name;
          if (std::strncmp(name, "dnnl_", 5) != 0) continue;
          const auto w = std::find(wanted.begin(), wanted.end(), std::string_view(name));
          if (w == wanted.end()) continue;
          if (++seen[*w] == 1) found[*w] = reinterpret_cast<void*>(lib.base + s.st_value);
        }
      }
    }
  }
  ::munmap(map, size);
  for (const auto& [name, count] : seen)
    if (count > 1) found.erase(name);  // ambiguous
  return found;
}

Api load_api() {
  Api api;
  if (const char* off = std::getenv("TVIE_ONEDNN_BOOKINGS"); off != nullptr && std::string_view(off) == "0") {
    api.source = "turned off (TVIE_ONEDNN_BOOKINGS=0)";  // the written-out rules, as where oneDNN cannot be asked
    return api;
  }
  const std::vector<std::string_view> wanted{
#define TVIE_DNNL_NAME(f) #f,
      TVIE_DNNL_FUNCTIONS(TVIE_DNNL_NAME)
#undef TVIE_DNNL_NAME
  };
  const LoadedLibrary lib = find_torch_cpu();
  if (lib.path.empty()) {
    api.source = "libtorch_cpu.so is not loaded in this process";
    return api;
  }
  // Exported (a LibTorch built that way, or linked to a shared oneDNN): the library's own lookup; else its symbol
  // table.
  std::unordered_map<std::string_view, void*> found;
  if (void* handle = ::dlopen(lib.path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    for (const auto name : wanted)
      if (void* p = ::dlsym(handle, std::string(name).c_str())) found[name] = p;
    ::dlclose(handle);
  }
  std::string how = cat("exported by ", lib.path);
  if (found.size() != wanted.size()) {
    std::string why;
    found = functions_in_symbol_table(lib, wanted, why);
    how = cat("from the symbol table of ", lib.path);
    if (!why.empty()) {
      api.source = why;
      return api;
    }
  }
  for (const auto name : wanted)
    if (!found.contains(name)) {
      api.source = cat(lib.path, " has no single definition of ", name);
      return api;
    }
#define TVIE_DNNL_BIND(f) api.f = reinterpret_cast<decltype(&::f)>(found.at(#f));
  TVIE_DNNL_FUNCTIONS(TVIE_DNNL_BIND)
#undef TVIE_DNNL_BIND
  // The header LibTorch ships describes the library it carries: refuse another version (its ABI may differ).
  const dnnl_version_t* v = api.dnnl_version();
  if (v == nullptr || v->major != DNNL_VERSION_MAJOR || v->minor != DNNL_VERSION_MINOR) {
    api.source = cat("the oneDNN in ", lib.path, " is not the version of its header (v", DNNL_VERSION_MAJOR, ".",
                     DNNL_VERSION_MINOR, ")");
    return api;
  }
  dnnl_engine_t engine = nullptr;
  if (api.dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) {
    api.source = "oneDNN could not create a CPU engine";
    return api;
  }
  api.engine = engine;  // kept for the process
  api.source = cat("oneDNN v", v->major, ".", v->minor, ".", v->patch, " (commit ", v->hash, "), ", how);
  return api;
}

const Api& api() {
  static const Api loaded = [] {
    Api a = load_api();
    log::debug(cat("oneDNN's bookings: ", a.source));
    return a;
  }();
  return loaded;
}

// Owners of oneDNN's handles.
struct MdDeleter {
  void operator()(dnnl_memory_desc* md) const { api().dnnl_memory_desc_destroy(md); }
};
using Md = std::unique_ptr<dnnl_memory_desc, MdDeleter>;
struct PdDeleter {
  void operator()(dnnl_primitive_desc* pd) const { api().dnnl_primitive_desc_destroy(pd); }
};
using Pd = std::unique_ptr<dnnl_primitive_desc, PdDeleter>;
struct AttrDeleter {
  void operator()(dnnl_primitive_attr* a) const { api().dnnl_primitive_attr_destroy(a); }
};
using Attr = std::unique_ptr<dnnl_primitive_attr, AttrDeleter>;

Md md(const std::vector<int64_t>& dims, dnnl_data_type_t dt, dnnl_format_tag_t tag) {
  dnnl_dims_t d{};
  std::copy(dims.begin(), dims.end(), d);
  dnnl_memory_desc_t out = nullptr;
  if (api().dnnl_memory_desc_create_with_tag(&out, static_cast<int>(dims.size()), d, dt, tag) != dnnl_success)
    return nullptr;
  return Md(out);
}

Attr user_scratchpad(bool sum) {
  dnnl_primitive_attr_t a = nullptr;
  if (api().dnnl_primitive_attr_create(&a) != dnnl_success) return nullptr;
  Attr attr(a);
  if (api().dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user) != dnnl_success) return nullptr;
  if (sum) {
    dnnl_post_ops_t ops = nullptr;
    if (api().dnnl_post_ops_create(&ops) != dnnl_success) return nullptr;
    const bool ok = api().dnnl_post_ops_append_sum(ops, 1.0f, 0, dnnl_data_type_undef) == dnnl_success &&
                    api().dnnl_primitive_attr_set_post_ops(a, ops) == dnnl_success;
    api().dnnl_post_ops_destroy(ops);
    if (!ok) return nullptr;
  }
  return attr;
}

std::string kernel_of(const dnnl_primitive_desc* pd) {
  const char* name = nullptr;
  if (api().dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, static_cast<void*>(&name)) != dnnl_success ||
      name == nullptr)
    return "?";
  return name;
}

int64_t scratchpad_of(const dnnl_primitive_desc* pd) {
  return static_cast<int64_t>(
      api().dnnl_memory_desc_get_size(api().dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0)));
}

// A tensor of the primitive (`what`), against the plain and the channels-last layouts of its dims.
Booked booked(const dnnl_primitive_desc* pd, dnnl_query_t what, const dnnl_memory_desc* plain,
              const dnnl_memory_desc* channels_last) {
  const auto* d = api().dnnl_primitive_desc_query_md(pd, what, 0);
  Booked b;
  b.bytes = static_cast<int64_t>(api().dnnl_memory_desc_get_size(d));
  b.plain = api().dnnl_memory_desc_equal(d, plain) != 0;
  b.channels_last = api().dnnl_memory_desc_equal(d, channels_last) != 0;
  return b;
}

}  // namespace

bool bookings_available(std::string* why) {
  if (why != nullptr) *why = api().source;
  return api().engine != nullptr;
}

std::optional<ConvBookings> conv_bookings(const ConvShape& c, int64_t element_bytes) {
  if (!bookings_available() || (element_bytes != 2 && element_bytes != 4)) return std::nullopt;
  const ThisThreadsCount threads(c.threads);
  const dnnl_data_type_t dt = element_bytes == 2 ? dnnl_bf16 : dnnl_f32;
  const int64_t pad = c.kernel / 2, out = (c.in_hw + 2 * pad - c.kernel) / c.stride + 1;
  const std::vector<int64_t> src{c.batch, c.cin, c.in_hw, c.in_hw}, wei{c.cout, c.cin, c.kernel, c.kernel},
      dst{c.batch, c.cout, out, out};
  const Md src_any = md(src, dt, dnnl_format_tag_any), wei_any = md(wei, dt, dnnl_format_tag_any),
           dst_any = md(dst, dt, dnnl_format_tag_any);
  const Md src_plain = md(src, dt, dnnl_nchw), wei_plain = md(wei, dt, dnnl_oihw), dst_plain = md(dst, dt, dnnl_nchw);
  const Md src_cl = md(src, dt, dnnl_acdb), wei_cl = md(wei, dt, dnnl_acdb), dst_cl = md(dst, dt, dnnl_acdb);
  const Attr attr = user_scratchpad(false);
  if (!src_any || !wei_any || !dst_any || !src_plain || !wei_plain || !dst_plain || !src_cl || !wei_cl || !dst_cl ||
      !attr)
    return std::nullopt;
  // LibTorch passes the padding on both sides (k / 2); oneDNN's dilation counts from 0.
  const dnnl_dims_t strides{c.stride, c.stride}, dilates{0, 0}, padding{pad, pad};
  const auto alg = dnnl_convolution_direct;
  dnnl_primitive_desc_t f = nullptr, hint = nullptr, d = nullptr, w = nullptr;
  if (api().dnnl_convolution_forward_primitive_desc_create(&f, api().engine, dnnl_forward_training, alg, src_any.get(),
                                                           wei_any.get(), nullptr, dst_any.get(), strides, dilates,
                                                           padding, padding, attr.get()) != dnnl_success)
    return std::nullopt;
  const Pd forward(f);
  if (api().dnnl_convolution_forward_primitive_desc_create(&hint, api().engine, dnnl_forward_training, alg,
                                                           src_any.get(), wei_any.get(), nullptr, dst_any.get(),
                                                           strides, dilates, padding, padding, nullptr) != dnnl_success)
    return std::nullopt;
  const Pd forward_hint(hint);
  if (api().dnnl_convolution_backward_data_primitive_desc_create(&d, api().engine, alg, src_any.get(), wei_any.get(),
                                                                 dst_any.get(), strides, dilates, padding, padding,
                                                                 hint, attr.get()) != dnnl_success)
    return std::nullopt;
  const Pd data(d);
  if (api().dnnl_convolution_backward_weights_primitive_desc_create(&w, api().engine, alg, src_any.get(), wei_any.get(),
                                                                    nullptr, dst_any.get(), strides, dilates, padding,
                                                                    padding, hint, attr.get()) != dnnl_success)
    return std::nullopt;
  const Pd weights(w);
  ConvBookings b;
  b.forward_kernel = kernel_of(f);
  b.fx = booked(f, dnnl_query_src_md, src_plain.get(), src_cl.get());
  b.fw = booked(f, dnnl_query_weights_md, wei_plain.get(), wei_cl.get());
  b.fy = booked(f, dnnl_query_dst_md, dst_plain.get(), dst_cl.get());
  b.forward_scratchpad = scratchpad_of(f);
  b.data_kernel = kernel_of(d);
  b.ddy = booked(d, dnnl_query_diff_dst_md, dst_plain.get(), dst_cl.get());
  b.dw = booked(d, dnnl_query_weights_md, wei_plain.get(), wei_cl.get());
  b.ddx = booked(d, dnnl_query_diff_src_md, src_plain.get(), src_cl.get());
  b.data_scratchpad = scratchpad_of(d);
  b.weights_kernel = kernel_of(w);
  b.wx = booked(w, dnnl_query_src_md, src_plain.get(), src_cl.get());
  b.wdy = booked(w, dnnl_query_diff_dst_md, dst_plain.get(), dst_cl.get());
  b.wdw = booked(w, dnnl_query_diff_weights_md, wei_plain.get(), wei_cl.get());
  b.weights_scratchpad = scratchpad_of(w);
  return b;
}

namespace {
std::optional<MatmulBooking> ask_bf16_matmul(int64_t m, int64_t k, int64_t n, bool a_transposed, bool b_transposed,
                                             bool sum, int64_t threads) {
  const ThisThreadsCount scoped(threads);
  const Md a = md({m, k}, dnnl_bf16, a_transposed ? dnnl_ba : dnnl_ab),
           b = md({k, n}, dnnl_bf16, b_transposed ? dnnl_ba : dnnl_ab), c = md({m, n}, dnnl_bf16, dnnl_ab);
  const Attr attr = user_scratchpad(sum);
  if (!a || !b || !c || !attr) return std::nullopt;
  dnnl_primitive_desc_t pd = nullptr;
  if (api().dnnl_matmul_primitive_desc_create(&pd, api().engine, a.get(), b.get(), nullptr, c.get(), attr.get()) !=
      dnnl_success)
    return std::nullopt;
  const Pd owned(pd);
  return MatmulBooking{kernel_of(pd), scratchpad_of(pd)};
}
}  // namespace

std::optional<MatmulBooking> bf16_matmul_booking(int64_t m, int64_t k, int64_t n, bool a_transposed, bool b_transposed,
                                                 bool sum, int64_t threads) {
  if (!bookings_available()) return std::nullopt;
  return remembered(std::tuple{m, k, n, a_transposed, b_transposed, sum, threads},
                    [&](const auto&) { return ask_bf16_matmul(m, k, n, a_transposed, b_transposed, sum, threads); });
}

#else  // no oneDNN header in this LibTorch

bool bookings_available(std::string* why) {
  if (why != nullptr) *why = "this LibTorch ships no oneDNN header (oneapi/dnnl/dnnl.h)";
  return false;
}
std::optional<ConvBookings> conv_bookings(const ConvShape&, int64_t) { return std::nullopt; }
std::optional<MatmulBooking> bf16_matmul_booking(int64_t, int64_t, int64_t, bool, bool, bool, int64_t) {
  return std::nullopt;
}

#endif

std::optional<LinearProducts> bf16_linear_bookings(int64_t rows, int64_t in, int64_t out, bool sum, int64_t threads) {
  const auto forward = bf16_matmul_booking(rows, in, out, false, true, sum, threads);
  const auto input_grad = bf16_matmul_booking(rows, out, in, false, false, false, threads);
  const auto weight_grad = bf16_matmul_booking(out, rows, in, true, false, false, threads);
  if (!forward || !input_grad || !weight_grad) return std::nullopt;
  return LinearProducts{forward->scratchpad, input_grad->scratchpad, weight_grad->scratchpad};
}

ConvScratch conv_scratch(const ConvShape& c, int64_t element_bytes, const ConvBookings& b) {
  const int64_t e = element_bytes, out = (c.in_hw + 2 * (c.kernel / 2) - c.kernel) / c.stride + 1;
  const int64_t x = c.batch * c.cin * c.in_hw * c.in_hw * e, y = c.batch * c.cout * out * out * e,
                w = c.cin * c.cout * c.kernel * c.kernel * e;
  const auto reordered = [](const Booked& t) { return t.plain ? 0 : t.bytes; };
  // mkldnn_to_dense's copy to the plain layout beside oneDNN's tensor, and .contiguous()'s of a channels-last one.
  const auto dense = [](const Booked& t, int64_t plain) { return t.bytes + plain + (t.channels_last ? plain : 0); };
  ConvScratch s;
  s.forward_bytes = std::max(reordered(b.fx) + reordered(b.fw) + b.fy.bytes + b.forward_scratchpad, dense(b.fy, y)) - y;
  const int64_t weights = reordered(b.wx) + reordered(b.wdy) + b.wdw.bytes + b.weights_scratchpad;
  const int64_t weights_dense = dense(b.wdw, w);
  int64_t peak = 0;  // above the weight gradient's w (and the input gradient's x) that backward leaves
  if (c.input_grad) {
    const int64_t data = reordered(b.ddy) + reordered(b.dw) + b.ddx.bytes + b.data_scratchpad;
    peak = std::max({data, dense(b.ddx, x), x + weights, x + weights_dense}) - x;
  } else {
    peak = std::max(weights, weights_dense);
  }
  s.backward_bytes = peak - w;
  return s;
}

std::optional<ConvScratch> conv_scratch_from_bookings(const ConvShape& c, int64_t element_bytes) {
  return remembered(
      std::tuple{c.batch, c.cin, c.cout, c.kernel, c.stride, c.in_hw, c.input_grad, c.threads, element_bytes},
      [&](const auto&) {
        const auto b = conv_bookings(c, element_bytes);
        return b ? std::optional<ConvScratch>(conv_scratch(c, element_bytes, *b)) : std::nullopt;
      });
}

}  // namespace tvie::trace::onednn
