// Stock effect stages (Aardvark DefaultSurfaces): GLSL bodies and declared interfaces of stock.hpp.
#include <quokka/fx/stock.hpp>

namespace quokka::fx::stock
{

StagePtr trafo()
{
	static const StagePtr s = std::make_shared<const Stage>(
	    Stage::vertex("stock.trafo")
	        .reads({{"Positions", V4f}, {"Normals", V3f}})
	        .writes({{"Positions", V4f, Interp::Smooth, Builtin::Position}, {"WorldPositions", V4f}, {"Normals", V3f}})
	        .uniforms({"ModelTrafo", "ModelViewProjTrafo", "NormalMatrix"})
	        // Camera-relative: ModelViewProjTrafo is the product taken in double precision (on the CPU, or by the
	        // heap's derive kernel), so the large translations of georeferenced models cancel before anything is
	        // narrowed to float; ViewProjTrafo * (ModelTrafo * p) in float jitters by metres at 10^7 m.
	        .glsl(R"(	s.WorldPositions = ModelTrafo * s.Positions;
	s.Positions = ModelViewProjTrafo * s.Positions;
	s.Normals = NormalMatrix * s.Normals;)"));
	return s;
}

StagePtr instanceTrafo()
{
	// mat3(M) instead of transpose(inverse(mat3(M))): exact up to scale for rotation + uniform scale, which is what
	// instancing (trees, props, …) uses, and it saves an inverse per vertex.
	static const StagePtr s =
	    std::make_shared<const Stage>(Stage::vertex("stock.instanceTrafo")
	                                      .reads({{"InstanceTrafo", M44f}, {"Positions", V4f}, {"Normals", V3f}})
	                                      .writes({{"Positions", V4f}, {"Normals", V3f}})
	                                      .glsl(R"(	s.Positions = s.InstanceTrafo * s.Positions;
	s.Normals = mat3(s.InstanceTrafo) * s.Normals;)"));
	return s;
}

StagePtr vertexColors()
{
	static const StagePtr s = std::make_shared<const Stage>(
	    Stage::fragment("stock.vertexColors").reads({{"Colors", V4f}}).writes({{"Colors", V4f}}).glsl(""));
	return s;
}

StagePtr constantColor()
{
	static const StagePtr s = std::make_shared<const Stage>(Stage::fragment("stock.constantColor")
	                                                            .writes({{"Colors", V4f}})
	                                                            .uniforms({"ConstantColor"})
	                                                            .glsl("\ts.Colors = ConstantColor;"));
	return s;
}

StagePtr simpleLighting()
{
	static const StagePtr s =
	    std::make_shared<const Stage>(Stage::fragment("stock.simpleLighting")
	                                      .reads({{"Normals", V3f}, {"WorldPositions", V4f}, {"Colors", V4f}})
	                                      .writes({{"Colors", V4f}})
	                                      .uniforms({"LightLocation"})
	                                      .glsl(R"(	vec3 n = normalize(s.Normals);
	vec3 l = normalize(LightLocation - s.WorldPositions.xyz);
	float diffuse = abs(dot(l, n));
	s.Colors = vec4(s.Colors.rgb * (0.2 + 0.8 * diffuse), s.Colors.a);)"));
	return s;
}

StagePtr diffuseTexture()
{
	static const StagePtr s = std::make_shared<const Stage>(
	    Stage::fragment("stock.diffuseTexture")
	        .reads({{"DiffuseColorCoordinates", V2f}, {"Colors", V4f}})
	        .writes({{"Colors", V4f}})
	        .texture("DiffuseColorTexture")
	        .glsl("\ts.Colors *= texture(DiffuseColorTexture, s.DiffuseColorCoordinates);"));
	return s;
}

} // namespace quokka::fx::stock
