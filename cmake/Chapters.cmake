# conv1d_add_chapter(<folder>): builds chapters/<folder>/main.cu into ch<NN>_<name>, remembers it for the
# tour, and registers its CTest runs (small shapes, every supported dtype, bad input, --help).
# ODD_SEQLEN n: the --seqlen of the odd-shape run (default 101), for a chapter whose --seqlen means
# something smaller (chapter 11: the new tokens of one decoding step, at most 8).
set_property(GLOBAL PROPERTY CONV1D_CHAPTERS "")

function(conv1d_add_chapter folder)
  cmake_parse_arguments(ARG "" "ODD_SEQLEN" "DTYPES;SOURCES;LIBS" ${ARGN})
  string(REGEX MATCH "^([0-9][0-9])_(.+)$" _m "${folder}")
  if(NOT _m)
    message(FATAL_ERROR "chapter folder '${folder}' must be named NN_name")
  endif()
  set(_target "ch${CMAKE_MATCH_1}_${CMAKE_MATCH_2}")
  add_executable(${_target} main.cu ${ARG_SOURCES})
  conv1d_gpu_sources(${_target} main.cu ${ARG_SOURCES})
  conv1d_target_defaults(${_target})
  target_link_libraries(${_target} PRIVATE conv1d_common ${ARG_LIBS})
  set_property(GLOBAL APPEND PROPERTY CONV1D_CHAPTERS ${_target})
  if(NOT ARG_DTYPES)
    set(ARG_DTYPES fp32)
  endif()
  set_property(TARGET ${_target} PROPERTY CONV1D_DTYPES "${ARG_DTYPES}")
  if(NOT ARG_ODD_SEQLEN)
    set(ARG_ODD_SEQLEN 101)
  endif()
  set_property(TARGET ${_target} PROPERTY CONV1D_ODD_SEQLEN ${ARG_ODD_SEQLEN})
endfunction()

# Called from tests/: the chapter executables at small and odd shapes. Exit 77 (no GPU) is "skipped".
function(conv1d_register_chapter_tests)
  get_property(_chapters GLOBAL PROPERTY CONV1D_CHAPTERS)
  foreach(_t IN LISTS _chapters)
    get_property(_dtypes TARGET ${_t} PROPERTY CONV1D_DTYPES)
    get_property(_odd_seqlen TARGET ${_t} PROPERTY CONV1D_ODD_SEQLEN)
    foreach(_dt IN LISTS _dtypes)
      # Odd sizes on purpose: D and L multiples of nothing, L shorter than W in the second run.
      add_test(NAME chapter.${_t}.${_dt}.odd
               COMMAND ${_t} --batch 3 --dim 37 --seqlen ${_odd_seqlen} --width 3 --dtype ${_dt} --iters 2 --warmup 1 --seed 7)
      add_test(NAME chapter.${_t}.${_dt}.tiny
               COMMAND ${_t} --batch 1 --dim 5 --seqlen 2 --width 4 --dtype ${_dt} --iters 1 --warmup 0 --seed 8)
      set_tests_properties(chapter.${_t}.${_dt}.odd chapter.${_t}.${_dt}.tiny PROPERTIES
                           SKIP_RETURN_CODE 77 LABELS "gpu;chapter" TIMEOUT 300)
    endforeach()
    # Bad input is refused with exit 2 before the GPU is looked for (so also on GPU-less machines).
    add_test(NAME chapter.${_t}.bad_input
             COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:${_t}> -DARGS=--width\;7 -DEXPECT_RC=2
                     "-DEXPECT_TEXT=--width must be 2, 3 or 4" -P ${PROJECT_SOURCE_DIR}/tests/expect_run.cmake)
    add_test(NAME chapter.${_t}.help
             COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:${_t}> -DARGS=--help -DEXPECT_RC=0
                     -DEXPECT_TEXT=usage: -P ${PROJECT_SOURCE_DIR}/tests/expect_run.cmake)
  endforeach()
endfunction()
