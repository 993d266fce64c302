// accessors.cpp — bounds-checked reads of glTF accessors, and the importer's message helpers.
#include "internal.hpp"

#include <algorithm>
#include <cstring>

namespace quokka::gltf::detail
{

std::string oneLine(const std::string& text, size_t limit)
{
	std::string out;
	bool pending_separator = false;
	for (char c : text)
	{
		if (c == '\n' || c == '\r')
		{
			pending_separator = !out.empty();
			continue;
		}
		if (pending_separator)
		{
			out.append("; ");
			pending_separator = false;
		}
		const auto u = static_cast<unsigned char>(c);
		out.push_back(u < 0x20 || u == 0x7f ? '?' : c);
	}
	while (!out.empty() && (out.back() == ' ' || out.back() == ';' || out.back() == '\t'))
		out.pop_back();
	if (out.size() > limit)
	{
		out.resize(limit);
		out.append("…");
	}
	return out;
}

Error fileError(ErrorCode code, const std::string& path, const std::string& problem)
{
	return makeError(code, cat("glTF '", path, "': ", oneLine(problem)));
}

namespace
{

float readComponent(const uint8_t* p, int component_type, bool normalized)
{
	switch (component_type)
	{
	case TINYGLTF_COMPONENT_TYPE_FLOAT:
	{
		float f;
		std::memcpy(&f, p, 4);
		return f;
	}
	case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
		return normalized ? float(*p) / 255.0f : float(*p);
	case TINYGLTF_COMPONENT_TYPE_BYTE:
	{
		const float v = float(int8_t(*p));
		return normalized ? std::max(v / 127.0f, -1.0f) : v;
	}
	case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
	{
		uint16_t v;
		std::memcpy(&v, p, 2);
		return normalized ? float(v) / 65535.0f : float(v);
	}
	case TINYGLTF_COMPONENT_TYPE_SHORT:
	{
		int16_t v;
		std::memcpy(&v, p, 2);
		return normalized ? std::max(float(v) / 32767.0f, -1.0f) : float(v);
	}
	default:
		return 0.0f;
	}
}

const char* componentTypeName(int component_type)
{
	switch (component_type)
	{
	case TINYGLTF_COMPONENT_TYPE_BYTE:
		return "BYTE";
	case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
		return "UNSIGNED_BYTE";
	case TINYGLTF_COMPONENT_TYPE_SHORT:
		return "SHORT";
	case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
		return "UNSIGNED_SHORT";
	case TINYGLTF_COMPONENT_TYPE_INT:
		return "INT";
	case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT:
		return "UNSIGNED_INT";
	case TINYGLTF_COMPONENT_TYPE_FLOAT:
		return "FLOAT";
	case TINYGLTF_COMPONENT_TYPE_DOUBLE:
		return "DOUBLE";
	default:
		return "unknown";
	}
}

} // namespace

Result<AccessorView> AccessorReader::view(int index, const char* role) const
{
	const std::string what = cat(role, " accessor ", index);
	if (index < 0 || size_t(index) >= model_.accessors.size())
		return fail(ErrorCode::InvalidArgument, cat(what, " does not exist"));
	const tinygltf::Accessor& a = model_.accessors[size_t(index)];
	if (a.sparse.isSparse)
		return fail(ErrorCode::Unsupported, cat(what, " is sparse"));
	if (a.bufferView < 0)
		return fail(ErrorCode::Unsupported, cat(what, " has no bufferView"));
	if (size_t(a.bufferView) >= model_.bufferViews.size())
		return fail(ErrorCode::InvalidArgument, cat(what, ": its bufferView does not exist"));
	const tinygltf::BufferView& bv = model_.bufferViews[size_t(a.bufferView)];
	if (bv.buffer < 0 || size_t(bv.buffer) >= model_.buffers.size())
		return fail(ErrorCode::InvalidArgument, cat(what, ": its buffer does not exist"));
	const tinygltf::Buffer& buffer = model_.buffers[size_t(bv.buffer)];
	if (bv.byteOffset > buffer.data.size() || bv.byteLength > buffer.data.size() - bv.byteOffset)
		return fail(ErrorCode::InvalidArgument,
		            cat(what, ": its bufferView lies outside its buffer (", buffer.data.size(), " bytes)"));
	const int component_size = tinygltf::GetComponentSizeInBytes(uint32_t(a.componentType));
	const int components = tinygltf::GetNumComponentsInType(uint32_t(a.type));
	if (component_size <= 0 || components <= 0)
		return fail(ErrorCode::InvalidArgument, cat(what, " has an invalid component type or type"));
	const size_t element = size_t(component_size) * size_t(components);
	const size_t stride = bv.byteStride != 0 ? bv.byteStride : element;
	if (stride < element)
		return fail(ErrorCode::InvalidArgument, cat(what, ": byteStride ", stride, " is smaller than an element"));
	AccessorView v;
	v.count = a.count;
	v.stride = stride;
	v.component_type = a.componentType;
	v.components = components;
	v.normalized = a.normalized;
	if (a.count > 0)
	{
		// offset + (count − 1)·stride + element ≤ byteLength, without overflow.
		const size_t length = bv.byteLength;
		if (a.byteOffset > length || element > length - a.byteOffset ||
		    (a.count - 1) > (length - a.byteOffset - element) / stride)
			return fail(ErrorCode::InvalidArgument,
			            cat(what, ": ", a.count, " elements do not fit in its bufferView (", length, " bytes)"));
		v.data = buffer.data.data() + bv.byteOffset + a.byteOffset;
	}
	return v;
}

Result<std::vector<float>> AccessorReader::floats(int index, const char* role, int min_components, int max_components,
                                                  bool normalized_ints, size_t expected_count, int& components) const
{
	auto viewed = view(index, role);
	QUOKKA_TRY(viewed);
	const AccessorView& v = viewed.value();
	const bool is_float = v.component_type == TINYGLTF_COMPONENT_TYPE_FLOAT;
	const bool is_norm_int = normalized_ints && v.normalized &&
	                         (v.component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE ||
	                          v.component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT);
	if (v.components < min_components || v.components > max_components || !(is_float || is_norm_int))
		return fail(ErrorCode::Unsupported,
		            cat(role, " accessor ", index, " has ", v.components, " components of ",
		                componentTypeName(v.component_type), v.normalized ? " (normalized)" : "", "; expected ",
		                min_components == max_components ? std::to_string(min_components)
		                                                 : cat(min_components, " or ", max_components),
		                normalized_ints ? " FLOAT or normalized UNSIGNED_BYTE/UNSIGNED_SHORT" : " FLOAT"));
	if (expected_count != kAnyCount && v.count != expected_count)
		return fail(ErrorCode::InvalidArgument,
		            cat(role, " accessor ", index, " has ", v.count, " elements, POSITION has ", expected_count));
	components = v.components;
	const size_t component_size = size_t(tinygltf::GetComponentSizeInBytes(uint32_t(v.component_type)));
	std::vector<float> out(v.count * size_t(components));
	for (size_t i = 0; i < v.count; ++i)
	{
		const uint8_t* e = v.data + i * v.stride;
		for (int c = 0; c < components; ++c)
			out[i * size_t(components) + size_t(c)] =
			    readComponent(e + size_t(c) * component_size, v.component_type, v.normalized);
	}
	return out;
}

Result<std::vector<uint32_t>> AccessorReader::indices(int index, size_t vertex_count, int& component_type) const
{
	auto viewed = view(index, "indices");
	QUOKKA_TRY(viewed);
	const AccessorView& v = viewed.value();
	component_type = v.component_type;
	if (v.components != 1 || (v.component_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE &&
	                          v.component_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT &&
	                          v.component_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT))
		return fail(ErrorCode::InvalidArgument,
		            cat("indices accessor ", index, " must be a SCALAR of unsigned byte, short or int"));
	std::vector<uint32_t> out(v.count);
	for (size_t i = 0; i < v.count; ++i)
	{
		const uint8_t* e = v.data + i * v.stride;
		uint32_t value = 0;
		if (v.component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE)
			value = *e;
		else if (v.component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT)
		{
			uint16_t s;
			std::memcpy(&s, e, 2);
			value = s;
		}
		else
			std::memcpy(&value, e, 4);
		if (value >= vertex_count)
			return fail(ErrorCode::InvalidArgument, cat("indices accessor ", index, ": index ", value, " at position ",
			                                            i, " is out of range (", vertex_count, " vertices)"));
		out[i] = value;
	}
	return out;
}

} // namespace quokka::gltf::detail
