#pragma once
// What a pipe delivers, handed on in whole lines: a child's stdout or stderr read a chunk at a
// time (after poll(2), or in a blocking loop) by the code that runs ranks, srun and exec-rank's
// command. One LineReader per descriptor; one thread.

#include <functional>
#include <string>

namespace fabric_chaos::core {

class LineReader {
 public:
  using OnLine = std::function<void(const std::string& line)>;  // without its '\n'

  // One read(2) of fd: every complete line to on_line. True at end of file or on a read error,
  // after the unfinished last line (if any) went to on_line as well; false otherwise, including
  // EINTR and EAGAIN, when nothing was read.
  bool readFrom(int fd, const OnLine& on_line);

 private:
  std::string pending_;
};

}  // namespace fabric_chaos::core
