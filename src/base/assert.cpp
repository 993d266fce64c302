#include <quokka/base/assert.hpp>
#include <quokka/base/result.hpp>

#include <cstdio>
#include <cstdlib>

namespace quokka
{
namespace
{
void defaultAssertHandler(const char* expr, const char* message, const char* file, int line)
{
	std::fprintf(stderr, "%s:%d: assertion failed: %s (%s)\n", file, line, message, expr);
	std::fflush(stderr);
	std::abort();
}

AssertHandler g_handler = &defaultAssertHandler;
} // namespace

AssertHandler setAssertHandler(AssertHandler handler)
{
	AssertHandler previous = g_handler;
	g_handler = handler ? handler : &defaultAssertHandler;
	return previous;
}

void assertFailed(const char* expr, const char* message, const char* file, int line)
{
	g_handler(expr, message, file, line);
}

const char* errorCodeName(ErrorCode code)
{
	switch (code)
	{
	case ErrorCode::NoDriver:
		return "NoDriver";
	case ErrorCode::NoDevice:
		return "NoDevice";
	case ErrorCode::MissingFeature:
		return "MissingFeature";
	case ErrorCode::OutOfMemory:
		return "OutOfMemory";
	case ErrorCode::InvalidArgument:
		return "InvalidArgument";
	case ErrorCode::ShaderCompile:
		return "ShaderCompile";
	case ErrorCode::Io:
		return "Io";
	case ErrorCode::DeviceLost:
		return "DeviceLost";
	case ErrorCode::Vulkan:
		return "Vulkan";
	case ErrorCode::Unsupported:
		return "Unsupported";
	}
	return "Unknown";
}

} // namespace quokka
