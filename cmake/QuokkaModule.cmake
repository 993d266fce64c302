# quokka_add_module(<name> <sources>…): the static library quokka_<name>, aliased quokka::<name> in this build and
# exported as quokka::<name> by the installed package. Its public headers are include/quokka/<name>/ (installed to
# <prefix>/include/quokka/<name>/); the house warnings apply to its own sources only.
include(GNUInstallDirs)
function(quokka_add_module name)
  add_library(quokka_${name} STATIC ${ARGN})
  add_library(quokka::${name} ALIAS quokka_${name})
  set_target_properties(quokka_${name} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(quokka_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(quokka_${name} PRIVATE $<BUILD_INTERFACE:quokka_warnings>)
  set_property(GLOBAL APPEND PROPERTY QUOKKA_MODULES quokka_${name})
endfunction()

# quokka_private_headers(<target> <interface targets>…): compile against header-only dependencies that never reach
# a consumer of the installed package (their code is compiled into the module's own objects).
function(quokka_private_headers target)
  foreach(dep ${ARGN})
    target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:${dep}>)
  endforeach()
endfunction()
