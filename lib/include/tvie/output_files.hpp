// Output files, for every layer that writes one: a path checked before any work starts, and a file written
// whole or not at all.
#pragma once

#include <string>

namespace tvie {

// Throws InvalidArgument(field, path, ...) unless `path` names a regular file that can be created or replaced
// (not a directory, a FIFO, a device or a socket). Creates nothing.
void check_output_path(const std::string& path, const std::string& field);
// Writes `content`, exactly, to `path` through a temporary file in the same directory and a rename, so that a
// reader never sees half a file; a symbolic link is written through, to its file. Throws tvie::Error when it cannot.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace tvie
