#include "commands.hpp"

#include <cstdio>
#include <cstdlib>

#include <unistd.h>

namespace quokka::app
{

void DeviceOptions::addTo(CLI::App& cmd)
{
	cmd.add_option("--device", device, "auto | gpu | cpu (default: QUOKKA_DEVICE, else auto)");
	cmd.add_flag("--validate", validate, "enable the Khronos validation layer; any validation error fails the run");
	cmd.add_flag("--no-cache", no_cache,
	             "keep compiled shaders and pipelines in memory only (default: QUOKKA_CACHE_DIR, else "
	             "$XDG_CACHE_HOME/quokka or ~/.cache/quokka)");
}

std::string defaultCacheDir()
{
	if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/')
		return std::string(xdg) + "/quokka";
	if (const char* home = std::getenv("HOME"); home && home[0] == '/')
		return std::string(home) + "/.cache/quokka";
	return {};
}

namespace
{
bool g_progress = false;
bool g_progress_shown = false;
} // namespace

void enableProgress(bool enabled)
{
	g_progress = enabled;
}

void progress(const std::string& status)
{
	if (!g_progress)
		return;
	std::fprintf(stderr, "\r\033[Kquokka: %s", status.c_str());
	std::fflush(stderr);
	g_progress_shown = true;
}

void clearProgress()
{
	if (!g_progress_shown)
		return;
	std::fprintf(stderr, "\r\033[K");
	std::fflush(stderr);
	g_progress_shown = false;
}

Result<gpu::DeviceDesc> DeviceOptions::desc() const
{
	gpu::DeviceDesc d = gpu::DeviceDesc::fromEnvironment();
	if (!device.empty())
	{
		auto kind = gpu::parseDeviceKind(device);
		if (!kind.ok())
			return kind.error();
		d.kind = kind.value();
		d.invalid_kind_text.clear();
	}
	if (validate)
		d.validation = true;
	if (no_cache)
		d.cache_dir.clear();
	else if (d.cache_dir.empty())
		d.cache_dir = defaultCacheDir();
	return d;
}

int fail(const Error& error)
{
	return fail(error.message);
}

int fail(const std::string& message)
{
	// The CLI contract: an error is one line on stderr and a non-zero exit. Multi-line messages (shader errors) keep
	// only the first line here.
	std::string line = message.substr(0, message.find('\n'));
	clearProgress();
	std::fprintf(stderr, "quokka: error: %s\n", line.c_str());
	return 1;
}

int usage(const std::string& message)
{
	std::fprintf(stderr, "quokka: error: %s (see quokka --help)\n", message.c_str());
	return 2;
}

} // namespace quokka::app
