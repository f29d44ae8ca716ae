// FloatToBf16 / Bf16ToFloat (engine/loader/float_convert.h): the one bf16 conversion,
// used by the safetensors writer and the CUDA backend's bf16 weight upload.
#include "engine/loader/float_convert.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace hgeval {
namespace {

TEST(FloatToBf16Test, RoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 lies halfway between 0x3f80 and 0x3f81: to the even 0x3f80.
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);
  // 1 + 3·2^-8 lies halfway between 0x3f81 and 0x3f82: to the even 0x3f82.
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);
  // Just above halfway rounds up, just below rounds down.
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x3f807fffu)), 0x3f80);
  EXPECT_EQ(FloatToBf16(-2.5f), 0xc020);
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(-2.5f)), -2.5f);
}

TEST(FloatToBf16Test, InfinitiesStayAndTheLargestFloatsRoundToInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatToBf16(inf), 0x7f80);
  EXPECT_EQ(FloatToBf16(-inf), 0xff80);
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_TRUE(std::isinf(Bf16ToFloat(0x7f80)));
}

TEST(FloatToBf16Test, NanStaysANanWithItsSign) {
  const uint16_t positive = FloatToBf16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(Bf16ToFloat(positive)));
  EXPECT_EQ(positive & 0x8000, 0);
  // A signalling NaN whose payload sits only in the low 16 bits would round to infinity
  // if it were rounded like a number; it stays a (quiet) NaN.
  const uint16_t low_payload = FloatToBf16(std::bit_cast<float>(0xff800001u));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(low_payload)));
  EXPECT_EQ(low_payload & 0x8000, 0x8000);
  EXPECT_EQ(low_payload & 0x0040, 0x0040);  // quiet bit set
}

TEST(FloatToBf16Test, ZerosAndSubnormalsKeepTheirSign) {
  EXPECT_EQ(FloatToBf16(0.0f), 0x0000);
  EXPECT_EQ(FloatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x00010000u)), 0x0001);
}

}  // namespace
}  // namespace hgeval
