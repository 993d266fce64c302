// quokka/base/result.hpp — errors from the environment or bad input (error tier 2 of 3: assert, Result, VkResult).
//
// A Result<T> holds either a value or an Error: an ErrorCode plus a one-line human message. The library never throws
// for its own errors; callers test `ok()` and the CLI prints `error().message` and exits non-zero.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include <quokka/base/assert.hpp>

namespace quokka
{

/// What kind of failure an Error reports. Stable: tests and the CLI switch on it.
enum class ErrorCode : uint32_t
{
	NoDriver,        ///< no Vulkan loader/ICD, or it enumerated no physical device
	NoDevice,        ///< no device of the requested kind (QUOKKA_DEVICE)
	MissingFeature,  ///< the device lacks a required feature or extension
	OutOfMemory,     ///< host or device memory exhausted, or a buffer maximum reached
	InvalidArgument, ///< bad input: impossible sizes, malformed values, unknown names
	ShaderCompile,   ///< GLSL failed to compile; the message holds the offending lines
	Io,              ///< a file could not be read or written
	DeviceLost,      ///< VK_ERROR_DEVICE_LOST
	Vulkan,          ///< any other fatal VkResult
	Unsupported,     ///< valid input that this build does not handle
};

/// A one-line error: a code plus a message naming what is missing or wrong.
struct Error
{
	ErrorCode code = ErrorCode::InvalidArgument;
	std::string message;
};

/// Returns the name of `code` ("NoDriver", …) for logs and JSON.
const char* errorCodeName(ErrorCode code);

/// Either a T or an Error. Cheap to move; `value()` on an error is a programmer error (asserts).
template <typename T>
class [[nodiscard]] Result
{
public:
	Result(T value) : v_(std::move(value)) {}
	Result(Error error) : v_(std::move(error)) {}

	bool ok() const { return v_.index() == 0; }
	explicit operator bool() const { return ok(); }

	T& value() &
	{
		QUOKKA_ASSERT(ok(), "Result::value() on an error");
		return std::get<0>(v_);
	}
	const T& value() const&
	{
		QUOKKA_ASSERT(ok(), "Result::value() on an error");
		return std::get<0>(v_);
	}
	T&& value() &&
	{
		QUOKKA_ASSERT(ok(), "Result::value() on an error");
		return std::get<0>(std::move(v_));
	}
	const Error& error() const
	{
		QUOKKA_ASSERT(!ok(), "Result::error() on a value");
		return std::get<1>(v_);
	}
	T* operator->() { return &value(); }
	T& operator*() { return value(); }

private:
	std::variant<T, Error> v_;
};

/// Result of an operation with no value.
template <>
class [[nodiscard]] Result<void>
{
public:
	Result() = default;
	Result(Error error) : error_(std::move(error)), ok_(false) {}

	bool ok() const { return ok_; }
	explicit operator bool() const { return ok_; }
	const Error& error() const
	{
		QUOKKA_ASSERT(!ok_, "Result::error() on success");
		return error_;
	}

private:
	Error error_;
	bool ok_ = true;
};

/// Builds an Error; reads well at return sites: `return makeError(ErrorCode::Io, "cannot open " + path);`
inline Error makeError(ErrorCode code, std::string message)
{
	return Error{code, std::move(message)};
}

} // namespace quokka

/// Propagates an error from an expression yielding Result<…>: `QUOKKA_TRY(device.submit(cmd));`
#define QUOKKA_TRY(expr)                                                                                               \
	do                                                                                                                 \
	{                                                                                                                  \
		auto&& quokka_try_result_ = (expr);                                                                            \
		if (!quokka_try_result_.ok())                                                                                  \
			return quokka_try_result_.error();                                                                         \
	} while (0)

#define QUOKKA_CONCAT_INNER_(a, b) a##b
#define QUOKKA_CONCAT_(a, b) QUOKKA_CONCAT_INNER_(a, b)
/// Declares `var` from the value of an expression yielding Result<T>, or propagates its error:
/// `QUOKKA_TRY_ASSIGN(buffer, device.createBuffer(desc));`
#define QUOKKA_TRY_ASSIGN(var, expr) QUOKKA_TRY_ASSIGN_IMPL_(var, expr, QUOKKA_CONCAT_(quokka_try_, __LINE__))
#define QUOKKA_TRY_ASSIGN_IMPL_(var, expr, tmp)                                                                        \
	auto tmp = (expr);                                                                                                 \
	if (!tmp.ok())                                                                                                     \
		return tmp.error();                                                                                            \
	auto var = std::move(tmp).value()
