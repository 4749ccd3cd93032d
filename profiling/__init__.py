"""Profiles of the tutorial's chapters: parse every supported profiler format into one table, chart it.

    python -m profiling run   --source builtin|cupti|rocprofv3|nsys --build BUILD_DIR   run and chart
    python -m profiling plot  FOLDER_OR_FILES...                                        chart existing files
    python -m profiling book  BOOK_TSV [--out PNG]                                      the whole book's chart
    python -m profiling parse FOLDER_OR_FILES...                                        print the table
    python -m profiling compare RUN_DIR                                   CUPTI kernels vs the chapters' events
    python -m profiling sass-lines SRC.csv.gz OUT.md          an ncu source page summed by SASS line

Formats (see docs/profiling.md): the chapters' own --profile-csv files and --summary tables, rocprofv3
CSV (ROCm 6.2 to 7.x, also the files `rocpd convert` writes), legacy rocprof v1 stats, `nsys stats`
CSV reports, `ncu --csv --page raw`, and our CUPTI tracer (profiling/cupti_tracer), which writes
rocprofv3's format. Only numpy, matplotlib and the standard library are used.
"""
