# Writes the man page and the three shells' completion scripts into OUT_DIR
# by running the quip just built (QUIP), so that they come from the same
# option tables as its --help. Run with
#   cmake -DQUIP=... -DOUT_DIR=... -P docs.cmake
# A failure (quip's tables disagreeing with its commands, say) fails the build.
function(quip_write command file)
  get_filename_component(dir "${OUT_DIR}/${file}" DIRECTORY)
  file(MAKE_DIRECTORY "${dir}")
  # No user's config or QUIP_* variables: the text must not depend on them.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=QUIP_HOME --unset=QUIP_CONFIG
                          --unset=QUIP_SESSION --unset=QUIP_MAX_INPUT "${QUIP}" ${command}
                  OUTPUT_FILE "${OUT_DIR}/${file}.new" RESULT_VARIABLE status
                  ERROR_VARIABLE errors)
  if(NOT status EQUAL 0 OR errors)
    message(FATAL_ERROR "quip ${command}: status ${status}: ${errors}")
  endif()
  file(RENAME "${OUT_DIR}/${file}.new" "${OUT_DIR}/${file}")
endfunction()

quip_write("--man" "man/man1/quip.1")
# Installed compressed, as Debian's policy asks of manual pages (man reads
# both): gzip -9n, with no name or time in the header, so the same page
# makes the same bytes.
execute_process(COMMAND gzip -9nkf "${OUT_DIR}/man/man1/quip.1" RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "gzip quip.1: status ${status}")
endif()
quip_write("completion;bash" "bash-completion/completions/quip")
quip_write("completion;zsh" "zsh/vendor-completions/_quip")
quip_write("completion;fish" "fish/vendor_completions.d/quip.fish")
