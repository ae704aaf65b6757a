// Output files: a path checked before any work, and a file written whole or not at all (tvie/output_files.hpp).
#include <tvie/output_files.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {

void check_output_path(const std::string& path, const std::string& field) {
  namespace fs = std::filesystem;
  const std::string accepted = "a file path in an existing, writable directory";
  if (path.empty()) throw InvalidArgument(field, path, accepted);
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) throw InvalidArgument(field, path, cat(accepted, " (this is a directory)"));
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw InvalidArgument(field, path, cat(accepted, " (no directory ", dir.string(), ")"));
  if (::access(dir.c_str(), W_OK) != 0)
    throw InvalidArgument(field, path, cat(accepted, " (", dir.string(), " is not writable)"));
  if (fs::exists(p, ec) && ::access(p.c_str(), W_OK) != 0)
    throw InvalidArgument(field, path, cat(accepted, " (the file exists and is not writable)"));
  // A FIFO, a device or a socket would be replaced by a regular file (a symbolic link to a file is written through).
  const auto status = fs::status(p, ec);
  if (fs::exists(status) && !fs::is_regular_file(status))
    throw InvalidArgument(field, path, cat(accepted, " (this is not a regular file: a FIFO, a device or a socket)"));
}

namespace {
// The file a path names once its symbolic links are followed (a dangling link: the file it would create).
std::filesystem::path link_target(std::filesystem::path p) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    const fs::path next = fs::read_symlink(p, ec);
    if (ec) break;
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  return p;
}
}  // namespace

void write_file_atomically(const std::string& link, const std::string& content) {
  // Through a symbolic link to its file: the rename below would otherwise replace the link itself.
  const std::string path = link_target(link).string();
  const std::string tmp = cat(path, ".tmp.", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(cat("cannot write ", tmp, ": ", std::strerror(errno)));
    out << content;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error(cat("cannot write ", tmp, ": ", std::strerror(errno)));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw Error(cat("cannot rename ", tmp, " to ", path, ": ", why));
  }
}

}  // namespace tvie
