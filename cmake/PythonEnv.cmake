# Python for the tests that need it (pytest, numpy, matplotlib) and for the tour's charts (profiling/).
# The system Python is used when it has them; otherwise a virtual environment is made in the build tree
# and requirements.txt installed into it. If that is impossible (no Python, offline), configuring
# says why and those tests are registered as skipped, while the C++ parts build and test as usual.
#
# Sets CONV1D_PYTHON (interpreter with the packages, or empty), CONV1D_PYTHON_WHY (why empty) and
# CONV1D_PYTHON_PLAIN (any Python 3, for the stdlib-only scripts such as the docs check).
find_package(Python3 COMPONENTS Interpreter)
set(CONV1D_PYTHON "")
set(CONV1D_PYTHON_WHY "")
set(CONV1D_PYTHON_PLAIN "")
set(_req ${PROJECT_SOURCE_DIR}/requirements.txt)
set(_probe "import numpy, matplotlib, pytest")

if(NOT Python3_FOUND)
  set(CONV1D_PYTHON_WHY "no Python 3 interpreter found")
else()
  set(CONV1D_PYTHON_PLAIN ${Python3_EXECUTABLE})
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "${_probe}" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0)
    set(CONV1D_PYTHON ${Python3_EXECUTABLE})
  else()
    set(_venv ${CMAKE_BINARY_DIR}/venv)
    set(_vpy ${_venv}/bin/python)
    set(_rc 1)
    if(EXISTS ${_vpy})
      execute_process(COMMAND ${_vpy} -c "${_probe}" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
    endif()
    if(NOT _rc EQUAL 0)
      message(STATUS "conv1d: system Python lacks numpy/matplotlib/pytest; installing requirements.txt into ${_venv}")
      execute_process(COMMAND ${Python3_EXECUTABLE} -m venv ${_venv} RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err)
      if(_rc EQUAL 0)
        execute_process(COMMAND ${_vpy} -m pip install --quiet --disable-pip-version-check -r ${_req}
                        RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err)
      endif()
      if(_rc EQUAL 0)
        execute_process(COMMAND ${_vpy} -c "${_probe}" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err)
      endif()
    endif()
    if(_rc EQUAL 0)
      set(CONV1D_PYTHON ${_vpy})
    else()
      string(STRIP "${_err}" _err)
      string(REGEX REPLACE "\n.*" "" _err "${_err}")
      set(CONV1D_PYTHON_WHY "could not install requirements.txt into ${_venv} (offline?): ${_err}")
    endif()
  endif()
endif()

if(CONV1D_PYTHON)
  message(STATUS "conv1d: Python tests use ${CONV1D_PYTHON}")
else()
  message(WARNING "conv1d: Python tests and the tour's charts will be skipped: ${CONV1D_PYTHON_WHY}")
endif()

# Registers the Python tests, or one skipped placeholder that says why they cannot run.
function(conv1d_add_python_tests)
  if(CONV1D_PYTHON_PLAIN)
    add_test(NAME docs.in_sync
             COMMAND ${CONV1D_PYTHON_PLAIN} ${PROJECT_SOURCE_DIR}/scripts/docs_sync.py --check)
    # Every command the pages show, checked without a GPU (scripts/docs_commands.py --parse): each
    # chapter command's flags through the chapter built here (CONV1D_PARSE_ONLY=1), profiling/'s and
    # the scripts' options against their --help, cmake presets and targets, ctest selections. It runs
    # the chapter executables of this build tree, which the build makes before CTest runs; the GPU
    # check runs the same commands for real (scripts/gpu-check.d/70-docs-commands.sh).
    add_test(NAME docs.commands_parse
             COMMAND ${CONV1D_PYTHON_PLAIN} ${PROJECT_SOURCE_DIR}/scripts/docs_commands.py --parse
                     --build ${PROJECT_BINARY_DIR})
    # The extractor and both modes on a made-up page and build tree (a bad flag must fail), and chapter
    # 01's CONV1D_PARSE_ONLY in this build tree.
    add_test(NAME scripts.docs_commands
             COMMAND ${CONV1D_PYTHON_PLAIN} ${PROJECT_SOURCE_DIR}/tests/scripts/test_docs_commands.py)
    set_tests_properties(scripts.docs_commands PROPERTIES ENVIRONMENT "CONV1D_BUILD_DIR=${PROJECT_BINARY_DIR}")
    # Chapter 10's goals table from the GPU check's files (scripts/ch10_goals.py), on made-up files
    # at the limits and on a committed check's.
    add_test(NAME scripts.ch10_goals
             COMMAND ${CONV1D_PYTHON_PLAIN} ${PROJECT_SOURCE_DIR}/tests/scripts/test_ch10_goals.py)
    # Nsight Compute's source page summed by how often each SASS line ran (profiling/sass_lines.py),
    # on made-up pages. Standard library only, so it runs here, without the packages below.
    add_test(NAME profiling.sass_lines
             COMMAND ${CONV1D_PYTHON_PLAIN} ${PROJECT_SOURCE_DIR}/tests/python/profiling/test_sass_lines.py)
    # The GPU check's tables for the docs (scripts/result_tables.py ncu and resources): Nsight
    # Compute's medians by kernel and cuobjdump's registers, on made-up files.
    add_test(NAME scripts.result_tables
             COMMAND ${CONV1D_PYTHON_PLAIN} ${PROJECT_SOURCE_DIR}/tests/scripts/test_result_tables.py)
    # The parts of a GPU check split over several device calls become results/gpu-check only when
    # they name one commit and one GPU, with no failed row (scripts/results_manifest.py).
    add_test(NAME scripts.results_manifest
             COMMAND ${CONV1D_PYTHON_PLAIN} ${PROJECT_SOURCE_DIR}/tests/scripts/test_results_manifest.py)
    # results/ holds what the pages, README, tests and scripts read: no script or patch, no file
    # nothing reads (the history of experiments stays in git).
    add_test(NAME results.only_what_is_read
             COMMAND ${CONV1D_PYTHON_PLAIN} ${PROJECT_SOURCE_DIR}/tests/scripts/test_results_read.py)
  endif()
  if(NOT CONV1D_PYTHON)
    add_test(NAME python.skipped COMMAND sh -c "echo 'Python tests skipped: ${CONV1D_PYTHON_WHY}'; exit 77")
    set_tests_properties(python.skipped PROPERTIES SKIP_RETURN_CODE 77)
    return()
  endif()
  add_executable(npy_writer ${PROJECT_SOURCE_DIR}/tests/npy_writer_main.cpp)
  conv1d_target_defaults(npy_writer)
  target_link_libraries(npy_writer PRIVATE conv1d_common)
  add_test(NAME python.npy_with_numpy
           COMMAND ${CONV1D_PYTHON} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/tests/python
                   --ignore=${PROJECT_SOURCE_DIR}/tests/python/profiling)
  # (Chapter 10's --save-npy read back in NumPy: with a GPU only; without one the chapter exits 77
  # and its test is skipped.)
  set_tests_properties(python.npy_with_numpy PROPERTIES ENVIRONMENT
                       "CONV1D_NPY_WRITER=$<TARGET_FILE:npy_writer>;CONV1D_CH10=$<TARGET_FILE:ch10_packed_sequences>")
  # profiling/: parsers against fixtures of every format, the charts' numbers, the command line; the
  # CUPTI tracer's CSV writer (CUDA builds) through a helper that needs no GPU.
  set(_env "PYTHONPATH=${PROJECT_SOURCE_DIR}" "MPLBACKEND=Agg")
  if(TARGET rocprof_csv_writer)
    list(APPEND _env "CONV1D_ROCPROF_CSV_WRITER=$<TARGET_FILE:rocprof_csv_writer>")
  endif()
  if(TARGET conv1d_cupti_tracer)
    list(APPEND _env "CONV1D_CUPTI_TRACER=$<TARGET_FILE:conv1d_cupti_tracer>")
  endif()
  add_test(NAME python.profiling
           COMMAND ${CONV1D_PYTHON} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/tests/python/profiling)
  set_tests_properties(python.profiling PROPERTIES ENVIRONMENT "${_env}" TIMEOUT 300)
endfunction()
