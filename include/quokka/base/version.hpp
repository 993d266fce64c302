// quokka/base/version.hpp — the library version as one integer: major * 10000 + minor * 100 + patch.
#pragma once

#define QUOKKA_VERSION 100 // 0.1.0
#define QUOKKA_VERSION_STRING "0.1.0"
