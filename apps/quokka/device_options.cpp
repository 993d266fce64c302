#include "commands.hpp"

#include <cstdio>

namespace quokka::app
{

void DeviceOptions::addTo(CLI::App& cmd)
{
	cmd.add_option("--device", device, "auto | gpu | cpu (default: QUOKKA_DEVICE, else auto)");
	cmd.add_flag("--validate", validate, "enable the Khronos validation layer; any validation error fails the run");
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
	return d;
}

int fail(const Error& error)
{
	return fail(error.message);
}

int fail(const std::string& message)
{
	// One line: the CLI contract (ARCHITECTURE §7). Multi-line messages (shader errors) keep only the first line here.
	std::string line = message.substr(0, message.find('\n'));
	std::fprintf(stderr, "quokka: error: %s\n", line.c_str());
	return 1;
}

int usage(const std::string& message)
{
	std::fprintf(stderr, "quokka: error: %s (see quokka --help)\n", message.c_str());
	return 2;
}

} // namespace quokka::app
