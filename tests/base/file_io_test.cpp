// writeFileAtomically: a complete file or the old one, never a truncated one; devices written in place and checked.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <quokka/base/file_io.hpp>

namespace fs = std::filesystem;
using quokka::writeFileAtomically;

namespace
{

std::string readAll(const std::string& path)
{
	std::ifstream in(path, std::ios::binary);
	return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::span<const uint8_t> bytesOf(const std::string& s)
{
	return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

/// A fresh empty folder for one test.
struct Folder
{
	fs::path path = fs::temp_directory_path() / ("quokka-file-io-" + std::to_string(::getpid()) + "-" +
	                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
	Folder()
	{
		fs::remove_all(path);
		fs::create_directories(path);
	}
	~Folder() { fs::remove_all(path); }
	size_t entries() const { return size_t(std::distance(fs::directory_iterator(path), fs::directory_iterator())); }
};

} // namespace

TEST(WriteFileAtomically, CreatesAndReplacesRegularFilesWithNothingLeftBeside)
{
	Folder dir;
	const std::string file = (dir.path / "out.bin").string();
	ASSERT_TRUE(writeFileAtomically(file, bytesOf("first")).ok());
	EXPECT_EQ(readAll(file), "first");
	ASSERT_TRUE(writeFileAtomically(file, bytesOf("second, longer")).ok());
	EXPECT_EQ(readAll(file), "second, longer");
	ASSERT_TRUE(writeFileAtomically(file, bytesOf("")).ok());
	EXPECT_EQ(readAll(file), "");
	EXPECT_EQ(dir.entries(), 1u) << "no temporary file is left";
	struct stat st
	{
	};
	ASSERT_EQ(::stat(file.c_str(), &st), 0);
	const mode_t mask = ::umask(0);
	::umask(mask);
	EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask) << "the usual permissions, not a temporary file's 0600";
}

TEST(WriteFileAtomically, ReplacesTheFileBehindASymbolicLinkAndKeepsTheLink)
{
	Folder dir;
	const fs::path target = dir.path / "target.bin";
	const fs::path link = dir.path / "link.bin";
	std::ofstream(target) << "old";
	fs::create_symlink(target, link);
	ASSERT_TRUE(writeFileAtomically(link.string(), bytesOf("new")).ok());
	EXPECT_TRUE(fs::is_symlink(link));
	EXPECT_EQ(readAll(target.string()), "new");
}

TEST(WriteFileAtomically, AFullDeviceIsAnErrorNamingTheReason)
{
	if (!fs::exists("/dev/full"))
		GTEST_SKIP() << "no /dev/full here";
	const std::string data(1 << 16, 'x');
	auto written = writeFileAtomically("/dev/full", bytesOf(data));
	ASSERT_FALSE(written.ok());
	EXPECT_EQ(written.error().code, quokka::ErrorCode::Io);
	EXPECT_NE(written.error().message.find("/dev/full"), std::string::npos) << written.error().message;
	EXPECT_NE(written.error().message.find("No space left"), std::string::npos) << written.error().message;
	EXPECT_TRUE(fs::is_character_file("/dev/full")) << "the device node is still there";
	EXPECT_TRUE(writeFileAtomically("/dev/null", bytesOf(data)).ok());
}

TEST(WriteFileAtomically, AFailedWriteLeavesTheOldFileAndNoTemporary)
{
	// A child process whose file-size limit is 4 KiB: writing 64 KiB fails with EFBIG part-way (SIGXFSZ ignored).
	Folder dir;
	const std::string file = (dir.path / "kept.bin").string();
	std::ofstream(file) << "the old content";
	const pid_t child = ::fork();
	ASSERT_GE(child, 0);
	if (child == 0)
	{
		std::signal(SIGXFSZ, SIG_IGN);
		rlimit limit{4096, 4096};
		::setrlimit(RLIMIT_FSIZE, &limit);
		const std::string data(1 << 16, 'x');
		auto written = writeFileAtomically(file, bytesOf(data));
		const bool named = !written.ok() && written.error().message.find("kept.bin") != std::string::npos &&
		                   written.error().message.find("too large") != std::string::npos;
		::_exit(written.ok() ? 1 : named ? 0 : 2);
	}
	int status = 0;
	ASSERT_EQ(::waitpid(child, &status, 0), child);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the write succeeded; 2: the error does not name the file and reason";
	EXPECT_EQ(readAll(file), "the old content");
	EXPECT_EQ(dir.entries(), 1u) << "the temporary file is removed";
}

TEST(WriteFileAtomically, DirectoriesEmptyNamesAndMissingFoldersAreErrors)
{
	Folder dir;
	EXPECT_FALSE(writeFileAtomically(dir.path.string(), bytesOf("x")).ok());
	EXPECT_FALSE(writeFileAtomically("", bytesOf("x")).ok());
	auto missing = writeFileAtomically((dir.path / "no" / "such" / "x.png").string(), bytesOf("x"));
	ASSERT_FALSE(missing.ok());
	EXPECT_NE(missing.error().message.find("No such file"), std::string::npos) << missing.error().message;
	EXPECT_EQ(dir.entries(), 0u);
}
