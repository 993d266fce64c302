// convert.cpp — a parsed glTF model → gltf::Scene: the scene walk, node transforms, cameras and one render object per
// mesh primitive instance.
#include "internal.hpp"

#include <algorithm>
#include <cmath>

#include <glm/gtc/quaternion.hpp>

namespace quokka::gltf
{

math::Trafo3d Camera::projection(double viewport_aspect) const
{
	const double aspect = viewport_aspect > 0.0 ? viewport_aspect : 1.0;
	if (orthographic)
	{
		const double half_h = ymag > 0.0 ? ymag : 1.0;
		const double near_z = std::max(znear, 0.0);
		const double far_z = zfar > near_z ? zfar : near_z + 1.0;
		return math::orthographic(-half_h * aspect, half_h * aspect, -half_h, half_h, near_z, far_z);
	}
	const double near_z = znear > 0.0 ? znear : 0.01;
	const double far_z = zfar > near_z ? zfar : near_z * 1e6;
	return math::perspective(yfov > 0.0 ? yfov : 0.8, aspect, near_z, far_z);
}

namespace detail
{
namespace
{

/// Walks one glTF model and builds the objects. Every failure is an Error whose message names the file.
class Converter
{
public:
	Converter(const std::string& path, const tinygltf::Model& model, const ImportOptions& options)
	    : path_(path), model_(model), options_(options), reader_(path, model), materials_(path, model, options)
	{
	}

	Result<Scene> run()
	{
		std::vector<int> roots;
		if (!model_.scenes.empty())
		{
			int s = model_.defaultScene >= 0 ? model_.defaultScene : 0;
			if (size_t(s) >= model_.scenes.size())
				return fail(ErrorCode::InvalidArgument, cat("the default scene ", s, " does not exist"));
			roots = model_.scenes[size_t(s)].nodes;
		}
		else if (model_.defaultScene >= 0)
			return fail(ErrorCode::InvalidArgument,
			            cat("the default scene ", model_.defaultScene, " does not exist (the file has no scenes)"));
		else
		{
			// No scene: every node that is nobody's child is a root.
			std::vector<bool> is_child(model_.nodes.size(), false);
			for (const tinygltf::Node& n : model_.nodes)
				for (int c : n.children)
					if (c >= 0 && size_t(c) < is_child.size())
						is_child[size_t(c)] = true;
			for (size_t i = 0; i < model_.nodes.size(); ++i)
				if (!is_child[i])
					roots.push_back(int(i));
		}

		// Depth-first with an explicit stack (deep hierarchies must not overflow the call stack). A node reached twice
		// is a cycle or a shared child, both invalid glTF.
		std::vector<bool> visited(model_.nodes.size(), false);
		struct Visit
		{
			int index;
			int parent;          ///< index in out_.nodes, -1 for a root
			math::Trafo3d world; ///< the parent's
		};
		std::vector<Visit> stack;
		for (auto it = roots.rbegin(); it != roots.rend(); ++it)
			stack.push_back({*it, -1, math::Trafo3d::identity()});
		while (!stack.empty())
		{
			const auto [index, parent_at, parent] = stack.back();
			stack.pop_back();
			if (index < 0 || size_t(index) >= model_.nodes.size())
				return fail(ErrorCode::InvalidArgument, cat("node ", index, " does not exist"));
			if (visited[size_t(index)])
				return fail(ErrorCode::InvalidArgument,
				            cat("node ", index, " is reached twice (a cycle or a shared child)"));
			visited[size_t(index)] = true;
			const tinygltf::Node& node = model_.nodes[size_t(index)];
			auto local = nodeTrafo(node, index);
			QUOKKA_TRY(local);
			// (The same product the chain computes, in the same order: what import works out from it agrees with it.)
			const math::Trafo3d world = parent_at < 0 ? local.value() : parent * local.value();
			const adaptive::cval<math::Trafo3d> local_value(local.value());
			const Node* up = parent_at < 0 ? nullptr : &out_.nodes[size_t(parent_at)];
			const scene::TrafoChain chain = up ? up->chain.child(local_value) : scene::TrafoChain::root(local_value);
			out_.nodes.push_back(Node{index, up ? up->index : -1, node.name, local_value, chain});
			const int at = int(out_.nodes.size() - 1);
			if (node.mesh >= 0)
				QUOKKA_TRY(addMesh(node.mesh, world, chain));
			if (node.camera >= 0)
				QUOKKA_TRY(addCamera(node, index, world));
			for (auto it = node.children.rbegin(); it != node.children.rend(); ++it)
				stack.push_back({*it, at, world});
		}
		if (out_.objects.empty())
			return fail(ErrorCode::InvalidArgument,
			            hidden_ > 0 ? "has nothing to draw (every mesh node has a singular, zero-scale transform)"
			                        : "has nothing to draw (no mesh primitive in the scene it shows)");
		return std::move(out_);
	}

private:
	Error fail(ErrorCode code, const std::string& problem) const { return fileError(code, path_, problem); }

	Result<math::Trafo3d> nodeTrafo(const tinygltf::Node& node, int index) const
	{
		const std::string what = cat("node ", index);
		for (const std::vector<double>* v : {&node.matrix, &node.translation, &node.rotation, &node.scale})
			for (double x : *v)
				if (!std::isfinite(x))
					return fail(ErrorCode::InvalidArgument, cat(what, " has a non-finite transform"));
		if (!node.matrix.empty())
		{
			if (node.matrix.size() != 16)
				return fail(ErrorCode::InvalidArgument, cat(what, ": matrix needs 16 numbers"));
			math::M44d m;
			for (int c = 0; c < 4; ++c)
				for (int r = 0; r < 4; ++r)
					m[c][r] = node.matrix[size_t(c * 4 + r)]; // column-major, like glm
			const double det = glm::determinant(m);
			if (!std::isfinite(det))
				return fail(ErrorCode::InvalidArgument, cat(what, ": its matrix overflows"));
			// A singular matrix (a zero scale) hides the node's subtree: no inverse to compute.
			return det == 0.0 ? math::Trafo3d{m, math::M44d(0.0)} : math::Trafo3d::fromMatrix(m);
		}
		if ((!node.translation.empty() && node.translation.size() != 3) ||
		    (!node.rotation.empty() && node.rotation.size() != 4) || (!node.scale.empty() && node.scale.size() != 3))
			return fail(ErrorCode::InvalidArgument,
			            cat(what, ": translation/rotation/scale have the wrong number of elements"));
		math::Trafo3d t = math::Trafo3d::identity();
		if (!node.translation.empty())
			t = math::Trafo3d::translation({node.translation[0], node.translation[1], node.translation[2]});
		if (!node.rotation.empty())
		{
			glm::dquat q(node.rotation[3], node.rotation[0], node.rotation[1], node.rotation[2]); // w, x, y, z
			const double len = glm::length(q);
			if (len > 0.0 && std::isfinite(len))
			{
				const math::M44d r = glm::mat4_cast(q / len);
				t = t * math::Trafo3d{r, glm::transpose(r)};
			}
		}
		if (!node.scale.empty())
		{
			// Trafo3d::scale asserts non-zero factors; a zero scale (a hidden node) gets a zero backward factor.
			math::Trafo3d s;
			for (int i = 0; i < 3; ++i)
			{
				const double f = node.scale[size_t(i)];
				s.forward[i][i] = f;
				s.backward[i][i] = f != 0.0 ? 1.0 / f : 0.0;
			}
			t = t * s;
		}
		return t;
	}

	Result<void> addCamera(const tinygltf::Node& node, int index, const math::Trafo3d& world)
	{
		if (size_t(node.camera) >= model_.cameras.size())
			return fail(ErrorCode::InvalidArgument, cat("node ", index, ": camera ", node.camera, " does not exist"));
		const tinygltf::Camera& c = model_.cameras[size_t(node.camera)];
		Camera cam;
		cam.node = index;
		cam.name = !c.name.empty() ? c.name : !node.name.empty() ? node.name : cat("camera ", node.camera);
		// The view is the inverse of the node's rigid placement; scale is not part of a camera's pose.
		const math::M44d& f = world.forward;
		math::M44d pose(1.0);
		for (int col = 0; col < 3; ++col)
		{
			const math::V3d axis(f[col]);
			const double len = glm::length(axis);
			if (!(len > 0.0) || !std::isfinite(len))
				return fail(ErrorCode::InvalidArgument, cat("node ", index, ": its camera's transform is singular"));
			pose[col] = math::V4d(axis / len, 0.0);
		}
		pose[3] = f[3];
		// A rigid motion's inverse, exactly: the transposed rotation and the rotated, negated translation.
		const math::M33d rt = glm::transpose(math::M33d(pose));
		math::M44d view(rt);
		view[3] = math::V4d(-(rt * math::V3d(pose[3])), 1.0);
		cam.view = math::Trafo3d{view, pose};
		if (c.type == "orthographic")
		{
			cam.orthographic = true;
			cam.xmag = c.orthographic.xmag;
			cam.ymag = c.orthographic.ymag;
			cam.znear = c.orthographic.znear;
			cam.zfar = c.orthographic.zfar;
			if (!(cam.ymag != 0.0) || !(cam.zfar > cam.znear) || cam.znear < 0.0)
				return fail(ErrorCode::InvalidArgument,
				            cat("camera ", node.camera, ": orthographic needs ymag ≠ 0 and zfar > znear ≥ 0"));
			cam.ymag = std::abs(cam.ymag);
			cam.xmag = std::abs(cam.xmag);
		}
		else if (c.type == "perspective")
		{
			cam.yfov = c.perspective.yfov;
			cam.aspect_ratio = c.perspective.aspectRatio;
			cam.znear = c.perspective.znear;
			cam.zfar = c.perspective.zfar;
			if (!(cam.yfov > 0.0 && cam.yfov < 3.14159) || !(cam.znear > 0.0) ||
			    (cam.zfar != 0.0 && !(cam.zfar > cam.znear)))
				return fail(ErrorCode::InvalidArgument,
				            cat("camera ", node.camera, ": perspective needs 0 < yfov < π, znear > 0, zfar > znear"));
		}
		else
			return fail(ErrorCode::InvalidArgument,
			            cat("camera ", node.camera, ": type '", c.type, "' is not perspective or orthographic"));
		out_.cameras.push_back(std::move(cam));
		return {};
	}

	Result<void> addMesh(int mesh_index, const math::Trafo3d& world, const scene::TrafoChain& chain)
	{
		if (size_t(mesh_index) >= model_.meshes.size())
			return fail(ErrorCode::InvalidArgument, cat("mesh ", mesh_index, " does not exist"));
		auto cached = meshes_.find(mesh_index);
		if (cached == meshes_.end())
		{
			std::vector<PrimitiveData> prims;
			const tinygltf::Mesh& mesh = model_.meshes[size_t(mesh_index)];
			for (size_t i = 0; i < mesh.primitives.size(); ++i)
			{
				auto prim =
				    convertPrimitive(reader_, model_, mesh.primitives[i], cat("mesh ", mesh_index, " primitive ", i));
				QUOKKA_TRY(prim);
				prims.push_back(std::move(prim).value());
			}
			cached = meshes_.emplace(mesh_index, std::move(prims)).first;
		}

		// A singular transform (zero scale) collapses the mesh: nothing to draw. A mirroring one turns the triangles'
		// winding around.
		const double det = glm::determinant(math::M33d(world.forward));
		if (!std::isfinite(det))
			return fail(ErrorCode::InvalidArgument, cat("mesh ", mesh_index, ": its node's world transform overflows"));
		if (det == 0.0)
		{
			++hidden_;
			return {};
		}
		const bool mirrored = det < 0.0;
		for (const PrimitiveData& prim : cached->second)
		{
			if (prim.elements == 0)
				continue;
			scene::RenderObject o;
			o.attributes = prim.attributes;
			o.indices = prim.indices;
			o.draw_call = adaptive::constant(prim.draw_call);
			o.uniforms = options_.shared_uniforms;
			o.uniforms["ModelTrafo"] = chain.world();
			QUOKKA_TRY(materials_.apply(prim, o));
			if (mirrored)
				o.state.front_face = adaptive::constant(VK_FRONT_FACE_CLOCKWISE);

			const math::Box3d world_bounds = prim.local_bounds.transformed(world);
			// The GPU works in 32-bit floats: a mesh placed beyond ±10^30 cannot be drawn (its products overflow).
			const math::V3d far_corner = glm::max(glm::abs(world_bounds.min), glm::abs(world_bounds.max));
			const double extent = std::max({far_corner.x, far_corner.y, far_corner.z});
			if (!(extent < 1e30))
				return fail(ErrorCode::InvalidArgument,
				            cat("mesh ", mesh_index, ": its node's transform places it beyond the 32-bit float range"));
			out_.bounds.extend(world_bounds);
			(prim.topology == Topology::Triangles ? out_.triangles
			 : prim.topology == Topology::Lines   ? out_.lines
			                                      : out_.points) += prim.elements;
			out_.objects.push_back(scene::makeRenderObject(std::move(o)));
		}
		return {};
	}

	const std::string& path_;
	const tinygltf::Model& model_;
	const ImportOptions& options_;
	AccessorReader reader_;
	Materials materials_;
	std::map<int, std::vector<PrimitiveData>> meshes_;
	uint64_t hidden_ = 0; ///< mesh instances skipped for a singular transform
	Scene out_;
};

} // namespace

Result<Scene> convertModel(const std::string& path, const tinygltf::Model& model, const ImportOptions& options)
{
	Converter converter(path, model, options);
	return converter.run();
}

} // namespace detail
} // namespace quokka::gltf
