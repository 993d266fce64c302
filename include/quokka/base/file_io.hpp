// quokka/base/file_io.hpp — writing output files so that a failure never leaves a truncated file behind.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <quokka/base/result.hpp>

namespace quokka
{

/// Writes `bytes` to `path` completely or not at all, and says why when it cannot:
/// - a path that does not exist yet, or names a regular file (through symbolic links too): the bytes go to a new
///   temporary file beside the target (`.NAME.tmp-PID-N`, created exclusively with the usual permissions), which is
///   flushed to disk and renamed over the target only after every write succeeded; on any failure it is removed and
///   the target is left as it was;
/// - anything else that exists — a character device (/dev/stdout, /dev/null, /dev/full), a FIFO — is written in
///   place (renaming would replace the device node), with every write and the close checked, so a full device is an
///   error, not a short file;
/// - a directory, an empty path or a missing parent directory is an error.
/// Errors are ErrorCode::Io with a message naming the path and the system's reason.
Result<void> writeFileAtomically(const std::string& path, std::span<const uint8_t> bytes);

} // namespace quokka
