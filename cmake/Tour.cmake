# `cmake --workflow --preset tour`: runs every chapter at the book's headline shape for the work it
# does and prints one table per kind of work (chapters/tour.cpp). Chapter logs, phase CSVs, the summary and the charts go to <build>/tour/.
get_property(_chapters GLOBAL PROPERTY CONV1D_CHAPTERS)
add_executable(conv1d_tour ${PROJECT_SOURCE_DIR}/chapters/tour.cpp)
conv1d_target_defaults(conv1d_tour)
set(_exes "")
foreach(_t IN LISTS _chapters)
  list(APPEND _exes "$<TARGET_FILE:${_t}>")
endforeach()
# The charts at the end need Python with numpy and matplotlib (cmake/PythonEnv.cmake); without it the
# tour says why they were skipped.
if(CONV1D_PYTHON)
  set(_charts --python ${CONV1D_PYTHON})
else()
  set(_charts --charts-skipped "${CONV1D_PYTHON_WHY}")
endif()
add_custom_target(tour
  COMMAND conv1d_tour --out ${CMAKE_BINARY_DIR}/tour ${_charts} --repo ${PROJECT_SOURCE_DIR} ${_exes}
  DEPENDS conv1d_tour ${_chapters}
  USES_TERMINAL
  COMMENT "The tour: every chapter at the book's headline shapes"
  COMMAND_EXPAND_LISTS)
