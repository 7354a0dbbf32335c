# Run by `cmake --install` (install(CODE) in CMakeLists.txt) with KVROOF_EXE
# (the built binary) and DEST (the install prefix, DESTDIR included): writes
# what is generated from the binary itself, so it cannot drift from its flags —
#   share/man/man1/kvroof.1                        from `kvroof --help` and each subcommand's --help
#   share/bash-completion/completions/kvroof       `kvroof completion bash`
#   share/kvroof/completion.zsh                    `kvroof completion zsh` (source it from ~/.zshrc)
function(run_kvroof out)
  execute_process(COMMAND "${KVROOF_EXE}" ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "kvroof ${ARGN} failed (${rc})")
  endif()
  string(REGEX REPLACE "Usage: [^ ]*kvroof" "Usage: kvroof" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Help text as a roff no-fill block: backslashes doubled, lines starting with . or ' protected.
function(roff_block out text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} ".nf\n${text}\n.fi\n" PARENT_SCOPE)
endfunction()

run_kvroof(top --help)
run_kvroof(version --version)
string(STRIP "${version}" version)
string(REGEX MATCH "Subcommands:\n(.*)\n\nExamples:" _ "${top}")
string(REGEX MATCHALL "\n  [a-z]+ " subs "\n${CMAKE_MATCH_1}")
roff_block(top_roff "${top}")
set(man ".TH KVROOF 1 \"\" \"${version}\" \"User Commands\"\n.SH NAME\nkvroof \\- closed-form model of LLM serving with KV cache and attention offload to CPU DRAM\n.SH SYNOPSIS\n.B kvroof\n\\fISUBCOMMAND\\fR [\\fIOPTIONS\\fR]\n.SH DESCRIPTION\n${top_roff}.SH SUBCOMMANDS\n")
foreach(s IN LISTS subs)
  string(STRIP "${s}" s)
  run_kvroof(help ${s} --help)
  roff_block(help_roff "${help}")
  string(APPEND man ".SS ${s}\n${help_roff}")
endforeach()
string(APPEND man ".SH SEE ALSO\nThe equations: share/doc/kvroof/model.md. Scenario files: share/kvroof/configs/.\n")
file(WRITE "${DEST}/share/man/man1/kvroof.1" "${man}")
message(STATUS "Installing: ${DEST}/share/man/man1/kvroof.1")

run_kvroof(bash completion bash)
file(WRITE "${DEST}/share/bash-completion/completions/kvroof" "${bash}")
message(STATUS "Installing: ${DEST}/share/bash-completion/completions/kvroof")
run_kvroof(zsh completion zsh)
file(WRITE "${DEST}/share/kvroof/completion.zsh" "${zsh}")
message(STATUS "Installing: ${DEST}/share/kvroof/completion.zsh")
