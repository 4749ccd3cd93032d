# Runs EXE with ARGS (a ;-list) and checks its exit code (EXPECT_RC) and that its output contains
# EXPECT_TEXT. Used for the chapters' command-line behaviour, which needs no GPU.
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "${EXE} ${ARGS}: exit ${rc}, expected ${EXPECT_RC}\nstdout:\n${out}\nstderr:\n${err}")
endif()
string(FIND "${out}${err}" "${EXPECT_TEXT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "${EXE} ${ARGS}: output lacks '${EXPECT_TEXT}'\nstdout:\n${out}\nstderr:\n${err}")
endif()
message(STATUS "ok: exit ${rc}, output contains '${EXPECT_TEXT}'")
