// quokka/gpu/vk.hpp — the Vulkan headers plus the VkResult check family (error tier 3 of 3: assert, Result, VkResult).
//
// Vk types stay visible in the gpu API. QUOKKA_VK_TRY turns a fatal VkResult into a tier-2 Error and
// returns it from the enclosing function (which must return Result<…>); QUOKKA_VK_CHECK asserts for calls that
// cannot fail short of a programming error.
#pragma once

#include <vulkan/vulkan.h>

#include <quokka/base/result.hpp>

namespace quokka::gpu
{

/// Name of a VkResult ("VK_ERROR_OUT_OF_DEVICE_MEMORY", …).
const char* vkResultName(VkResult result);

/// Maps a failing VkResult to an Error whose message names `what` and the result.
Error vkError(VkResult result, const char* what);

} // namespace quokka::gpu

/// Evaluates a Vk call; on any result other than VK_SUCCESS returns vkError(result, "<call>") from the caller.
#define QUOKKA_VK_TRY(call)                                                                                            \
	do                                                                                                                 \
	{                                                                                                                  \
		VkResult quokka_vk_result_ = (call);                                                                           \
		if (quokka_vk_result_ != VK_SUCCESS)                                                                           \
			return ::quokka::gpu::vkError(quokka_vk_result_, #call);                                                   \
	} while (0)

/// Evaluates a Vk call that only fails on programmer error; asserts VK_SUCCESS (the call always runs).
#define QUOKKA_VK_CHECK(call)                                                                                          \
	do                                                                                                                 \
	{                                                                                                                  \
		[[maybe_unused]] VkResult quokka_vk_result_ = (call);                                                          \
		QUOKKA_ASSERT(quokka_vk_result_ == VK_SUCCESS, #call);                                                         \
	} while (0)
