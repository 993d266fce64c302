// document.cpp — checks on a glTF document's JSON before tinygltf parses it. tinygltf reads glTF 2.0 only and drops
// fields of the wrong type silently (a texture whose "source" is a string becomes a texture without an image); these
// checks turn such files into one-line errors that name the field, so nothing renders silently wrong.
#include "internal.hpp"

#include <algorithm>
#include <initializer_list>

#include <nlohmann/json.hpp>

namespace quokka::gltf
{

const std::vector<std::string>& supportedRequiredExtensions()
{
	static const std::vector<std::string> names{"KHR_texture_transform"};
	return names;
}

namespace detail
{
namespace
{

using Json = nlohmann::json;

/// "where.key", or "key" at the top level.
std::string at(const std::string& where, const char* key)
{
	return where.empty() ? std::string(key) : cat(where, ".", key);
}

/// Collects the first problem found; every check is a no-op once one is recorded.
class Checker
{
public:
	std::string problem;

	bool ok() const { return problem.empty(); }

	/// `key` of `object` is absent, or an integer ≥ 0.
	void index(const Json& object, const char* key, const std::string& where)
	{
		if (!ok() || !object.contains(key))
			return;
		const Json& v = object[key];
		if (!v.is_number_integer() || v.get<int64_t>() < 0)
			problem = cat(at(where, key), " must be an integer ≥ 0");
	}
	/// `key` is absent or one of `allowed`.
	void oneOf(const Json& object, const char* key, std::initializer_list<int64_t> allowed, const std::string& where)
	{
		if (!ok() || !object.contains(key))
			return;
		const Json& v = object[key];
		if (!v.is_number_integer() || std::find(allowed.begin(), allowed.end(), v.get<int64_t>()) == allowed.end())
			problem = cat(at(where, key), " has an invalid value");
	}
	/// `key` is absent or an array of `size` numbers (any size when 0).
	void numbers(const Json& object, const char* key, size_t size, const std::string& where)
	{
		if (!ok() || !object.contains(key))
			return;
		const Json& v = object[key];
		bool good = v.is_array() && (size == 0 || v.size() == size);
		for (size_t i = 0; good && i < v.size(); ++i)
			good = v[i].is_number();
		if (!good)
			problem = size ? cat(at(where, key), " must be an array of ", size, " numbers")
			               : cat(at(where, key), " must be an array of numbers");
	}
	void number(const Json& object, const char* key, const std::string& where)
	{
		if (ok() && object.contains(key) && !object[key].is_number())
			problem = cat(at(where, key), " must be a number");
	}
	void string(const Json& object, const char* key, const std::string& where)
	{
		if (ok() && object.contains(key) && !object[key].is_string())
			problem = cat(at(where, key), " must be a string");
	}
	void boolean(const Json& object, const char* key, const std::string& where)
	{
		if (ok() && object.contains(key) && !object[key].is_boolean())
			problem = cat(at(where, key), " must be true or false");
	}
	/// `key` is absent or an object; returns it (or an empty object).
	const Json& object(const Json& parent, const char* key, const std::string& where)
	{
		static const Json empty = Json::object();
		if (!ok() || !parent.contains(key))
			return empty;
		if (!parent[key].is_object())
		{
			problem = cat(at(where, key), " must be an object");
			return empty;
		}
		return parent[key];
	}
	/// The top-level array `key` (absent: empty), each element an object.
	const Json& objects(const Json& parent, const char* key, const std::string& where)
	{
		static const Json empty = Json::array();
		if (!ok() || !parent.contains(key))
			return empty;
		const Json& v = parent[key];
		if (!v.is_array())
		{
			problem = cat(where, key, " must be an array");
			return empty;
		}
		for (size_t i = 0; i < v.size() && ok(); ++i)
			if (!v[i].is_object())
				problem = cat(where, key, "[", i, "] must be an object");
		return ok() ? v : empty;
	}
	void textureInfo(const Json& material, const char* key, const std::string& where)
	{
		const Json& info = object(material, key, where);
		const std::string here = at(where, key);
		index(info, "index", here);
		index(info, "texCoord", here);
		const Json& ext = object(info, "extensions", here);
		const Json& transform = object(ext, "KHR_texture_transform", here + ".extensions");
		const std::string there = here + ".KHR_texture_transform";
		numbers(transform, "offset", 2, there);
		number(transform, "rotation", there);
		numbers(transform, "scale", 2, there);
		index(transform, "texCoord", there);
	}
};

void checkFields(const Json& doc, Checker& c)
{
	c.index(doc, "scene", "");
	for (const char* key : {"accessors", "bufferViews", "buffers", "images", "textures", "samplers", "materials",
	                        "meshes", "nodes", "scenes", "cameras"})
		c.objects(doc, key, "");
	const Json& meshes = c.objects(doc, "meshes", "");
	for (size_t m = 0; m < meshes.size() && c.ok(); ++m)
	{
		const std::string where = cat("meshes[", m, "]");
		if (!meshes[m].contains("primitives") || !meshes[m]["primitives"].is_array())
		{
			c.problem = cat(where, ".primitives must be an array");
			break;
		}
		const Json& prims = meshes[m]["primitives"];
		for (size_t p = 0; p < prims.size() && c.ok(); ++p)
		{
			const std::string at = cat(where, ".primitives[", p, "]");
			if (!prims[p].is_object())
			{
				c.problem = cat(at, " must be an object");
				break;
			}
			const Json& attributes = c.object(prims[p], "attributes", at);
			for (auto it = attributes.begin(); it != attributes.end() && c.ok(); ++it)
				c.index(attributes, it.key().c_str(), cat(at, ".attributes"));
			c.index(prims[p], "indices", at);
			c.index(prims[p], "material", at);
			c.oneOf(prims[p], "mode", {0, 1, 2, 3, 4, 5, 6}, at);
		}
	}
	const Json& nodes = c.objects(doc, "nodes", "");
	for (size_t n = 0; n < nodes.size() && c.ok(); ++n)
	{
		const std::string where = cat("nodes[", n, "]");
		c.index(nodes[n], "mesh", where);
		c.index(nodes[n], "camera", where);
		if (c.ok() && nodes[n].contains("children"))
		{
			const Json& children = nodes[n]["children"];
			if (!children.is_array())
				c.problem = cat(where, ".children must be an array");
			for (size_t i = 0; c.ok() && i < children.size(); ++i)
				if (!children[i].is_number_integer() || children[i].get<int64_t>() < 0)
					c.problem = cat(where, ".children[", i, "] must be an integer ≥ 0");
		}
		c.numbers(nodes[n], "matrix", 16, where);
		c.numbers(nodes[n], "translation", 3, where);
		c.numbers(nodes[n], "rotation", 4, where);
		c.numbers(nodes[n], "scale", 3, where);
	}
	const Json& textures = c.objects(doc, "textures", "");
	for (size_t t = 0; t < textures.size() && c.ok(); ++t)
	{
		c.index(textures[t], "source", cat("textures[", t, "]"));
		c.index(textures[t], "sampler", cat("textures[", t, "]"));
	}
	const Json& samplers = c.objects(doc, "samplers", "");
	for (size_t s = 0; s < samplers.size() && c.ok(); ++s)
	{
		const std::string where = cat("samplers[", s, "]");
		c.oneOf(samplers[s], "magFilter", {9728, 9729}, where);
		c.oneOf(samplers[s], "minFilter", {9728, 9729, 9984, 9985, 9986, 9987}, where);
		c.oneOf(samplers[s], "wrapS", {33071, 33648, 10497}, where);
		c.oneOf(samplers[s], "wrapT", {33071, 33648, 10497}, where);
	}
	const Json& images = c.objects(doc, "images", "");
	for (size_t i = 0; i < images.size() && c.ok(); ++i)
	{
		c.string(images[i], "uri", cat("images[", i, "]"));
		c.index(images[i], "bufferView", cat("images[", i, "]"));
	}
	const Json& materials = c.objects(doc, "materials", "");
	for (size_t m = 0; m < materials.size() && c.ok(); ++m)
	{
		const std::string where = cat("materials[", m, "]");
		const Json& pbr = c.object(materials[m], "pbrMetallicRoughness", where);
		c.numbers(pbr, "baseColorFactor", 4, where + ".pbrMetallicRoughness");
		c.textureInfo(pbr, "baseColorTexture", where + ".pbrMetallicRoughness");
		c.numbers(materials[m], "emissiveFactor", 3, where);
		c.textureInfo(materials[m], "emissiveTexture", where);
		c.string(materials[m], "alphaMode", where);
		if (c.ok() && materials[m].contains("alphaMode"))
		{
			const std::string mode = materials[m]["alphaMode"].get<std::string>();
			if (mode != "OPAQUE" && mode != "MASK" && mode != "BLEND")
				c.problem = cat(where, ".alphaMode '", mode, "' is not OPAQUE, MASK or BLEND");
		}
		c.number(materials[m], "alphaCutoff", where);
		c.boolean(materials[m], "doubleSided", where);
	}
	const Json& cameras = c.objects(doc, "cameras", "");
	for (size_t i = 0; i < cameras.size() && c.ok(); ++i)
	{
		const std::string where = cat("cameras[", i, "]");
		c.string(cameras[i], "type", where);
		const Json& persp = c.object(cameras[i], "perspective", where);
		for (const char* key : {"yfov", "znear", "zfar", "aspectRatio"})
			c.number(persp, key, where + ".perspective");
		const Json& ortho = c.object(cameras[i], "orthographic", where);
		for (const char* key : {"xmag", "ymag", "znear", "zfar"})
			c.number(ortho, key, where + ".orthographic");
	}
}

} // namespace

Result<void> checkDocument(const std::string& path, const unsigned char* json, size_t size)
{
	const Json doc = Json::parse(json, json + size, nullptr, /*allow_exceptions*/ false);
	if (doc.is_discarded())
		return fileError(ErrorCode::InvalidArgument, path, "is not valid JSON (nor a .glb)");
	if (!doc.is_object())
		return fileError(ErrorCode::InvalidArgument, path, "is JSON but not a glTF document (not an object)");
	// glTF 2.x only: a 1.0 file parses into nothing drawable, a 3.0 one may mean anything.
	if (!doc.contains("asset") || !doc["asset"].is_object())
		return fileError(ErrorCode::InvalidArgument, path, "has no asset object (glTF 2.0 requires it)");
	const Json& asset = doc["asset"];
	if (!asset.contains("version") || !asset["version"].is_string())
		return fileError(ErrorCode::InvalidArgument, path, "has no asset.version string (glTF 2.0 requires it)");
	const std::string version = asset["version"].get<std::string>();
	if (version.rfind("2.", 0) != 0)
		return fileError(ErrorCode::Unsupported, path, cat("glTF version '", version, "' is not supported (2.x only)"));
	if (asset.contains("minVersion") &&
	    (!asset["minVersion"].is_string() || asset["minVersion"].get<std::string>().rfind("2.0", 0) != 0))
		return fileError(ErrorCode::Unsupported, path,
		                 cat("needs glTF ",
		                     asset["minVersion"].is_string() ? asset["minVersion"].get<std::string>()
		                                                     : std::string("(unreadable minVersion)"),
		                     " or later (2.0 is supported)"));
	if (doc.contains("extensionsRequired"))
	{
		const Json& required = doc["extensionsRequired"];
		if (!required.is_array())
			return fileError(ErrorCode::InvalidArgument, path, "extensionsRequired must be an array");
		const std::vector<std::string>& supported = supportedRequiredExtensions();
		for (const Json& name : required)
		{
			if (!name.is_string())
				return fileError(ErrorCode::InvalidArgument, path, "extensionsRequired must hold strings");
			if (std::find(supported.begin(), supported.end(), name.get<std::string>()) == supported.end())
				return fileError(
				    ErrorCode::Unsupported, path,
				    cat("requires the extension ", name.get<std::string>(), ", which this importer does not support"));
		}
	}
	Checker checker;
	checkFields(doc, checker);
	if (!checker.ok())
		return fileError(ErrorCode::InvalidArgument, path, checker.problem);
	return {};
}

} // namespace detail
} // namespace quokka::gltf
