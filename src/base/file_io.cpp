// Output files written completely or not at all (file_io.hpp): a temporary beside the target and rename(2) for files,
// checked writes in place for devices and FIFOs.
#include <quokka/base/file_io.hpp>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace quokka
{

namespace
{

Error ioError(const std::string& what, const std::string& path, int err)
{
	return Error{ErrorCode::Io, what + " '" + path + "': " + std::strerror(err)};
}

/// Writes all of `bytes` to `fd`, retrying short writes and EINTR; returns 0 or the errno of the failure.
int writeAll(int fd, std::span<const uint8_t> bytes)
{
	size_t done = 0;
	while (done < bytes.size())
	{
		ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0)
			return EIO;
		done += size_t(n);
	}
	return 0;
}

Result<void> writeInPlace(const std::string& path, std::span<const uint8_t> bytes)
{
	int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return ioError("cannot open", path, errno);
	int err = writeAll(fd, bytes);
	if (::close(fd) != 0 && err == 0)
		err = errno;
	if (err != 0)
		return ioError("cannot write", path, err);
	return {};
}

std::atomic<uint64_t> g_temp_counter{0};

} // namespace

Result<void> writeFileAtomically(const std::string& path, std::span<const uint8_t> bytes)
{
	if (path.empty())
		return Error{ErrorCode::Io, "cannot write a file with an empty name"};
	std::string target = path;
	struct stat st
	{
	};
	if (::stat(path.c_str(), &st) == 0)
	{
		if (S_ISDIR(st.st_mode))
			return Error{ErrorCode::Io, "cannot write '" + path + "': it is a directory"};
		if (!S_ISREG(st.st_mode))
			return writeInPlace(path, bytes);
		// A regular file, perhaps through symbolic links: replace the file itself, not the link.
		if (char* real = ::realpath(path.c_str(), nullptr))
		{
			target = real;
			std::free(real);
		}
	}
	else if (errno != ENOENT)
		return ioError("cannot write", path, errno);

	const size_t slash = target.rfind('/');
	const std::string dir = slash == std::string::npos ? std::string() : target.substr(0, slash + 1);
	const std::string name = slash == std::string::npos ? target : target.substr(slash + 1);
	std::string temp;
	int fd = -1;
	for (int attempt = 0; attempt < 100 && fd < 0; ++attempt)
	{
		temp = dir + "." + name + ".tmp-" + std::to_string(::getpid()) + "-" +
		       std::to_string(g_temp_counter.fetch_add(1, std::memory_order_relaxed));
		fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			return ioError("cannot create a file in the folder of", path, errno);
	}
	if (fd < 0)
		return ioError("cannot create a temporary file beside", path, EEXIST);
	int err = writeAll(fd, bytes);
	if (err == 0 && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
		err = errno;
	if (::close(fd) != 0 && err == 0)
		err = errno;
	if (err == 0 && ::rename(temp.c_str(), target.c_str()) != 0)
		err = errno;
	if (err != 0)
	{
		::unlink(temp.c_str());
		return ioError("cannot write", path, err);
	}
	return {};
}

} // namespace quokka
