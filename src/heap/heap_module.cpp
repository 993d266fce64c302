// Anchor translation unit of quokka::heap (the module's sources are listed in src/heap/CMakeLists.txt).
#include <quokka/fx/megacall_glsl.hpp>
