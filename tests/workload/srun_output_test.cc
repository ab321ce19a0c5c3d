// srun's output for a labelled job step: task labels (padded once there are ten tasks or more),
// srun's verdicts on tasks that ended badly, and report lines framed to pass srun's 1024-byte
// line split whole. The srun lines are as Slurm 22.05 printed them on the namespace lab.

#include "workload/slurm/srun_output.h"

#include <gtest/gtest.h>

namespace fabric_chaos::workload {
namespace {

TEST(SrunOutputTest, LabelsNameTheTask) {
  auto line = parseLabelledLine("1: {\"t\":\"ready\"}");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->task, 1);
  EXPECT_EQ(line->text, "{\"t\":\"ready\"}");
  line = parseLabelledLine(" 3: padded");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->task, 3);
  EXPECT_EQ(line->text, "padded");
  line = parseLabelledLine("12: a: b");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->task, 12);
  EXPECT_EQ(line->text, "a: b");
  line = parseLabelledLine("0:");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->text, "");
  EXPECT_FALSE(parseLabelledLine("srun: forcing job termination").has_value());
  EXPECT_FALSE(parseLabelledLine("").has_value());
  EXPECT_FALSE(parseLabelledLine("x1: y").has_value());
  EXPECT_FALSE(parseLabelledLine("99999999999: overflow").has_value());
}

TEST(SrunOutputTest, TaskEndsAsSrunReportsThem) {
  auto end = parseTaskEnd("srun: error: h0: task 1: Exited with exit code 2");
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->task, 1);
  EXPECT_EQ(end->node, "h0");
  EXPECT_EQ(end->exit_code, 2);
  end = parseTaskEnd("srun: error: h1: task 0: Killed");
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->exit_code, 137);
  end = parseTaskEnd("srun: error: h0: task 1: Terminated");
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->exit_code, 143);
  EXPECT_FALSE(parseTaskEnd("srun: Force Terminated StepId=6.0").has_value());
  EXPECT_FALSE(parseTaskEnd("srun: error: h0: tasks 0-1: Killed").has_value());
  EXPECT_FALSE(
      parseTaskEnd("1: slurmstepd-h0: error: *** STEP 6.0 ON h0 CANCELLED ***").has_value());
  EXPECT_FALSE(parseTaskEnd("srun: error: Unable to allocate resources: Invalid partition name "
                            "specified")
                   .has_value());
}

TEST(SrunOutputTest, FramedLinesFitAndJoinBack) {
  std::string line = "{\"samples\":[";
  while (line.size() < 2500) line += "[1,2,3,4],";
  line += "[5]]}";
  const auto pieces = frameLine(line, 1000);
  ASSERT_EQ(pieces.size(), 3u);
  LineJoiner joiner;
  std::optional<std::string> whole;
  for (const std::string& piece : pieces) {
    EXPECT_LE(piece.size(), 1000u);
    EXPECT_FALSE(whole.has_value()) << "completed before its last piece";
    whole = joiner.add(piece);
  }
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(*whole, line);

  // Short lines go as they are; a line that starts with a mark is framed so it reads back.
  EXPECT_EQ(frameLine("{\"t\":\"done\"}", 1000), std::vector<std::string>{"{\"t\":\"done\"}"});
  for (const std::string marked : {"+1", "=x", "+"}) {
    const auto framed = frameLine(marked, 1000);
    LineJoiner fresh;
    std::optional<std::string> back;
    for (const auto& piece : framed) back = fresh.add(piece);
    ASSERT_TRUE(back.has_value()) << marked;
    EXPECT_EQ(*back, marked);
  }
  // A piece that is exactly the remainder still ends the line.
  const std::string exact(999 * 2, 'a');
  LineJoiner exact_joiner;
  std::optional<std::string> exact_back;
  for (const auto& piece : frameLine(exact, 1000)) exact_back = exact_joiner.add(piece);
  ASSERT_TRUE(exact_back.has_value());
  EXPECT_EQ(*exact_back, exact);
}

}  // namespace
}  // namespace fabric_chaos::workload
