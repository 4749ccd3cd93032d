# `cmake --workflow --preset tour`: runs every chapter at its default shape and prints one table
# (chapters/tour.cpp). Chapter logs and the summary go to <build>/tour/.
get_property(_chapters GLOBAL PROPERTY CONV1D_CHAPTERS)
add_executable(conv1d_tour ${PROJECT_SOURCE_DIR}/chapters/tour.cpp)
conv1d_target_defaults(conv1d_tour)
set(_exes "")
foreach(_t IN LISTS _chapters)
  list(APPEND _exes "$<TARGET_FILE:${_t}>")
endforeach()
add_custom_target(tour
  COMMAND conv1d_tour --out ${CMAKE_BINARY_DIR}/tour ${_exes}
  DEPENDS conv1d_tour ${_chapters}
  USES_TERMINAL
  COMMENT "The tour: every chapter at its default shape"
  COMMAND_EXPAND_LISTS)
