// The exact (context, continuation) requests of real docs of every task, checked against
// docs/specs/lm-eval-tasks.md. The expected strings were written from the spec's
// definitions (templates, choices, gold), independently of the task code.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tasks/api/registry.h"
#include "tasks/api/task.h"
#include "tests/support/paths.h"

namespace hgeval::tasks {
namespace {

struct ExpectedDoc {
  int64_t gold;
  std::vector<std::pair<std::string, std::string>> requests;
};

void CheckFirstDocs(const std::string& task_name, int64_t expected_docs,
                    const std::vector<ExpectedDoc>& expected) {
  auto task = CreateTask(task_name);
  ASSERT_TRUE(task.ok()) << task.status();
  auto docs = (*task)->LoadDocs(hgeval::testing::SourcePath("data"));
  ASSERT_TRUE(docs.ok()) << docs.status();
  EXPECT_EQ(static_cast<int64_t>(docs->size()), expected_docs);
  for (size_t d = 0; d < expected.size(); ++d) {
    SCOPED_TRACE(task_name + " doc " + std::to_string(d));
    auto requests = (*task)->Requests((*docs)[d]);
    ASSERT_TRUE(requests.ok()) << requests.status();
    ASSERT_EQ(requests->size(), expected[d].requests.size());
    for (size_t r = 0; r < requests->size(); ++r) {
      EXPECT_EQ((*requests)[r].type, RequestType::kLoglikelihood);
      EXPECT_EQ((*requests)[r].context, expected[d].requests[r].first);
      EXPECT_EQ((*requests)[r].continuation, expected[d].requests[r].second);
    }
    if (task_name.rfind("lambada", 0) != 0) {
      EXPECT_EQ((*task)->Target((*docs)[d]), expected[d].gold);
    }
  }
}

TEST(TaskRequestsTest, Piqa) {
  CheckFirstDocs(
      "piqa", 1838,
      {
          {0,
           {
               {"Question: How do I ready a guinea pig cage for it's new occupants?\nAnswer:",
                " Provide the guinea pig with a cage full of a few inches of bedding made of "
                "ripped paper strips, you will also need to supply it with a water bottle and a "
                "food dish."},
               {"Question: How do I ready a guinea pig cage for it's new occupants?\nAnswer:",
                " Provide the guinea pig with a cage full of a few inches of bedding made of "
                "ripped jeans material, you will also need to supply it with a water bottle and a "
                "food dish."},
           }},
          {1,
           {
               {"Question: dresser\nAnswer:", " replace drawer with bobby pin "},
               {"Question: dresser\nAnswer:", " finish, woodgrain with  bobby pin "},
           }},
          {1,
           {
               {"Question: To fight Ivan Drago in Rocky for sega master system.\nAnswer:",
                " Drago isn't in this game because it was released before Rocky IV."},
               {"Question: To fight Ivan Drago in Rocky for sega master system.\nAnswer:",
                " You have to defeat Apollo Creed and Clubber Lang first."},
           }},
      });
}

TEST(TaskRequestsTest, ArcEasy) {
  CheckFirstDocs("arc_easy", 2376,
                 {
                     {0,
                      {
                          {"Question: Which statement best explains why photosynthesis is the "
                           "foundation of most food webs?\nAnswer:",
                           " Sunlight is the source of energy for nearly all ecosystems."},
                          {"Question: Which statement best explains why photosynthesis is the "
                           "foundation of most food webs?\nAnswer:",
                           " Most ecosystems are found on land instead of in water."},
                          {"Question: Which statement best explains why photosynthesis is the "
                           "foundation of most food webs?\nAnswer:",
                           " Carbon dioxide is more available than other gases."},
                          {"Question: Which statement best explains why photosynthesis is the "
                           "foundation of most food webs?\nAnswer:",
                           " The producers in all ecosystems are plants."},
                      }},
                     {1,
                      {
                          {"Question: Which piece of safety equipment is used to keep mold spores "
                           "from entering the respiratory system?\nAnswer:",
                           " safety goggles"},
                          {"Question: Which piece of safety equipment is used to keep mold spores "
                           "from entering the respiratory system?\nAnswer:",
                           " breathing mask"},
                          {"Question: Which piece of safety equipment is used to keep mold spores "
                           "from entering the respiratory system?\nAnswer:",
                           " rubber gloves"},
                          {"Question: Which piece of safety equipment is used to keep mold spores "
                           "from entering the respiratory system?\nAnswer:",
                           " lead apron"},
                      }},
                     {3,
                      {
                          {"Question: Meiosis is a type of cell division in which germ cells "
                           "divide to produce haploid cells. Where does meiosis occur?\nAnswer:",
                           " brain cells"},
                          {"Question: Meiosis is a type of cell division in which germ cells "
                           "divide to produce haploid cells. Where does meiosis occur?\nAnswer:",
                           " bone cells"},
                          {"Question: Meiosis is a type of cell division in which germ cells "
                           "divide to produce haploid cells. Where does meiosis occur?\nAnswer:",
                           " muscle cells"},
                          {"Question: Meiosis is a type of cell division in which germ cells "
                           "divide to produce haploid cells. Where does meiosis occur?\nAnswer:",
                           " ovary cells"},
                      }},
                 });
}

TEST(TaskRequestsTest, ArcChallenge) {
  CheckFirstDocs(
      "arc_challenge", 1172,
      {
          {2,
           {
               {"Question: An astronomer observes that a planet rotates faster after a meteorite "
                "impact. Which is the most likely effect of this increase in rotation?\nAnswer:",
                " Planetary density will decrease."},
               {"Question: An astronomer observes that a planet rotates faster after a meteorite "
                "impact. Which is the most likely effect of this increase in rotation?\nAnswer:",
                " Planetary years will become longer."},
               {"Question: An astronomer observes that a planet rotates faster after a meteorite "
                "impact. Which is the most likely effect of this increase in rotation?\nAnswer:",
                " Planetary days will become shorter."},
               {"Question: An astronomer observes that a planet rotates faster after a meteorite "
                "impact. Which is the most likely effect of this increase in rotation?\nAnswer:",
                " Planetary gravity will become stronger."},
           }},
          {1,
           {
               {"Question: A group of engineers wanted to know how different building designs "
                "would respond during an earthquake. They made several models of buildings and "
                "tested each for its ability to withstand earthquake conditions. Which will most "
                "likely result from testing different building designs?\nAnswer:",
                " buildings will be built faster"},
               {"Question: A group of engineers wanted to know how different building designs "
                "would respond during an earthquake. They made several models of buildings and "
                "tested each for its ability to withstand earthquake conditions. Which will most "
                "likely result from testing different building designs?\nAnswer:",
                " buildings will be made safer"},
               {"Question: A group of engineers wanted to know how different building designs "
                "would respond during an earthquake. They made several models of buildings and "
                "tested each for its ability to withstand earthquake conditions. Which will most "
                "likely result from testing different building designs?\nAnswer:",
                " building designs will look nicer"},
               {"Question: A group of engineers wanted to know how different building designs "
                "would respond during an earthquake. They made several models of buildings and "
                "tested each for its ability to withstand earthquake conditions. Which will most "
                "likely result from testing different building designs?\nAnswer:",
                " building materials will be cheaper"},
           }},
          {2,
           {
               {"Question: The end result in the process of photosynthesis is the production of "
                "sugar and oxygen. Which step signals the beginning of photosynthesis?\nAnswer:",
                " Chemical energy is absorbed through the roots."},
               {"Question: The end result in the process of photosynthesis is the production of "
                "sugar and oxygen. Which step signals the beginning of photosynthesis?\nAnswer:",
                " Light energy is converted to chemical energy."},
               {"Question: The end result in the process of photosynthesis is the production of "
                "sugar and oxygen. Which step signals the beginning of photosynthesis?\nAnswer:",
                " Chlorophyll in the leaf captures light energy."},
               {"Question: The end result in the process of photosynthesis is the production of "
                "sugar and oxygen. Which step signals the beginning of photosynthesis?\nAnswer:",
                " Sunlight is converted into chlorophyll."},
           }},
      });
}

TEST(TaskRequestsTest, Openbookqa) {
  CheckFirstDocs("openbookqa", 500,
                 {
                     {1,
                      {
                          {"A person wants to start saving money so that they can afford a nice "
                           "vacation at the end of the year. After looking over their budget and "
                           "expenses, they decide the best way to save money is to",
                           " make more phone calls"},
                          {"A person wants to start saving money so that they can afford a nice "
                           "vacation at the end of the year. After looking over their budget and "
                           "expenses, they decide the best way to save money is to",
                           " quit eating lunch out"},
                          {"A person wants to start saving money so that they can afford a nice "
                           "vacation at the end of the year. After looking over their budget and "
                           "expenses, they decide the best way to save money is to",
                           " buy less with monopoly money"},
                          {"A person wants to start saving money so that they can afford a nice "
                           "vacation at the end of the year. After looking over their budget and "
                           "expenses, they decide the best way to save money is to",
                           " have lunch with friends"},
                      }},
                     {0,
                      {
                          {"There is most likely going to be fog around:", " a marsh"},
                          {"There is most likely going to be fog around:", " a tundra"},
                          {"There is most likely going to be fog around:", " the plains"},
                          {"There is most likely going to be fog around:", " a desert"},
                      }},
                     {2,
                      {
                          {"Predators eat", " lions"},
                          {"Predators eat", " humans"},
                          {"Predators eat", " bunnies"},
                          {"Predators eat", " grass"},
                      }},
                 });
}

// BoolQ's requests: the document's context continued by " no", then by " yes".
ExpectedDoc YesNoDoc(int64_t gold, const std::string& context) {
  return {gold, {{context, " no"}, {context, " yes"}}};
}

TEST(TaskRequestsTest, Boolq) {
  CheckFirstDocs(
      "boolq", 3270,
      {
          YesNoDoc(
              0,
              "All biomass goes through at least some of these steps: it needs to be grown, "
              "collected, dried, fermented, distilled, and burned. All of these steps require "
              "resources and an infrastructure. The total amount of energy input into the "
              "process compared to the energy released by burning the resulting ethanol fuel is "
              "known as the energy balance (or ``energy returned on energy invested''). Figures "
              "compiled in a 2007 report by National Geographic Magazine point to modest results "
              "for corn ethanol produced in the US: one unit of fossil-fuel energy is required "
              "to create 1.3 energy units from the resulting ethanol. The energy balance for "
              "sugarcane ethanol produced in Brazil is more favorable, with one unit of "
              "fossil-fuel energy required to create 8 from the ethanol. Energy balance "
              "estimates are not easily produced, thus numerous such reports have been generated "
              "that are contradictory. For instance, a separate survey reports that production "
              "of ethanol from sugarcane, which requires a tropical climate to grow "
              "productively, returns from 8 to 9 units of energy for each unit expended, as "
              "compared to corn, which only returns about 1.34 units of fuel energy for each "
              "unit of energy expended. A 2006 University of California Berkeley study, after "
              "analyzing six separate studies, concluded that producing ethanol from corn uses "
              "much less petroleum than producing gasoline.\nQuestion: does ethanol take more "
              "energy make that produces?\nAnswer:"),
          YesNoDoc(
              1,
              "Property tax or 'house tax' is a local tax on buildings, along with appurtenant "
              "land. It is and imposed on the Possessor (not the custodian of property as per "
              "1978, 44th amendment of constitution). It resembles the US-type wealth tax and "
              "differs from the excise-type UK rate. The tax power is vested in the states and "
              "is delegated to local bodies, specifying the valuation method, rate band, and "
              "collection procedures. The tax base is the annual rental value (ARV) or "
              "area-based rating. Owner-occupied and other properties not producing rent are "
              "assessed on cost and then converted into ARV by applying a percentage of cost, "
              "usually four percent. Vacant land is generally exempt. Central government "
              "properties are exempt. Instead a 'service charge' is permissible under executive "
              "order. Properties of foreign missions also enjoy tax exemption without requiring "
              "reciprocity. The tax is usually accompanied by service taxes, e.g., water tax, "
              "drainage tax, conservancy (sanitation) tax, lighting tax, all using the same tax "
              "base. The rate structure is flat on rural (panchayat) properties, but in the "
              "urban (municipal) areas it is mildly progressive with about 80% of assessments "
              "falling in the first two brackets.\nQuestion: is house tax and property tax are "
              "same?\nAnswer:"),
          YesNoDoc(
              1,
              "Phantom pain sensations are described as perceptions that an individual "
              "experiences relating to a limb or an organ that is not physically part of the "
              "body. Limb loss is a result of either removal by amputation or congenital limb "
              "deficiency. However, phantom limb sensations can also occur following nerve "
              "avulsion or spinal cord injury.\nQuestion: is pain experienced in a missing body "
              "part or paralyzed area?\nAnswer:"),
      });
}

TEST(TaskRequestsTest, SocialIqa) {
  CheckFirstDocs("social_iqa", 1954,
                 {
                     {2,
                      {
                          {"Q: Tracy didn't go home that evening and resisted Riley's attacks. "
                           "What does Tracy need to do before this?\nA:",
                           " make a new plan"},
                          {"Q: Tracy didn't go home that evening and resisted Riley's attacks. "
                           "What does Tracy need to do before this?\nA:",
                           " Go home and see Riley"},
                          {"Q: Tracy didn't go home that evening and resisted Riley's attacks. "
                           "What does Tracy need to do before this?\nA:",
                           " Find somewhere to go"},
                      }},
                     {0,
                      {
                          {"Q: Sydney walked past a homeless woman asking for change but did not "
                           "have any money they could give to her. Sydney felt bad afterwards. How "
                           "would you describe Sydney?\nA:",
                           " sympathetic"},
                          {"Q: Sydney walked past a homeless woman asking for change but did not "
                           "have any money they could give to her. Sydney felt bad afterwards. How "
                           "would you describe Sydney?\nA:",
                           " like a person who was unable to help"},
                          {"Q: Sydney walked past a homeless woman asking for change but did not "
                           "have any money they could give to her. Sydney felt bad afterwards. How "
                           "would you describe Sydney?\nA:",
                           " incredulous"},
                      }},
                     {1,
                      {
                          {"Q: Sasha protected the patients' rights by making new laws regarding "
                           "cancer drug trials. What will patients want to do next?\nA:",
                           " write new laws"},
                          {"Q: Sasha protected the patients' rights by making new laws regarding "
                           "cancer drug trials. What will patients want to do next?\nA:",
                           " get petitions signed"},
                          {"Q: Sasha protected the patients' rights by making new laws regarding "
                           "cancer drug trials. What will patients want to do next?\nA:",
                           " live longer"},
                      }},
                 });
}

TEST(TaskRequestsTest, Winogrande) {
  CheckFirstDocs(
      "winogrande", 1267,
      {
          {1,
           {
               {"Sarah was a much better surgeon than Maria so Sarah",
                " always got the easier cases."},
               {"Sarah was a much better surgeon than Maria so Maria",
                " always got the easier cases."},
           }},
          {0,
           {
               {"Sarah was a much better surgeon than Maria so Sarah",
                " always got the harder cases."},
               {"Sarah was a much better surgeon than Maria so Maria",
                " always got the harder cases."},
           }},
          {1,
           {
               {"They were worried the wine would ruin the bed and the blanket, but the blanket",
                " was't ruined."},
               {"They were worried the wine would ruin the bed and the blanket, but the bed",
                " was't ruined."},
           }},
      });
}

TEST(TaskRequestsTest, LambadaOpenai) {
  CheckFirstDocs(
      "lambada_openai", 5153,
      {
          {0,
           {
               {"In my palm is a clear stone, and inside it is a small ivory statuette. A guardian "
                "angel.\n\n\"Figured if you're going to be out at night getting hit by cars, you "
                "might as well have some backup.\"\n\nI look at him, feeling stunned. Like this is "
                "some sort of sign. But as I stare at Harlin, his mouth curved in a confident "
                "grin, I don't care about",
                " signs"},
           }},
          {0,
           {
               {"Give me a minute to change and I'll meet you at the docks.\" She'd forced those "
                "words through her teeth.\n\n\"No need to change. We won't be that "
                "long.\"\n\nShane gripped her arm and started leading her to the dock.\n\n\"I can "
                "make it there on my own,",
                " Shane"},
           }},
          {0,
           {
               {"\"Only one source I know of that would be likely to cough up enough money to "
                "finance a phony sleep research facility and pay people big bucks to solve crimes "
                "in their dreams,\" Farrell concluded dryly.\n\n\"What can I say?\" Ellis unfolded "
                "his arms and widened his hands. \"Your tax dollars at work.\"\n\nBefore Farrell "
                "could respond, Leila's voice rose from inside the house.\n\n\"No insurance?\" she "
                "wailed. \"What do you mean you don't have any",
                " insurance"},
           }},
      });
}

TEST(TaskRequestsTest, LambadaStandard) {
  CheckFirstDocs(
      "lambada_standard", 5153,
      {
          {0,
           {
               {"in my palm is a clear stone , and inside it is a small ivory statuette . a "
                "guardian angel . `` figured if you 're going to be out at night getting hit by "
                "cars , you might as well have some backup . '' i look at him , feeling stunned . "
                "like this is some sort of sign . but as i stare at harlin , his mouth curved in a "
                "confident grin , i do n't care about",
                " signs"},
           }},
          {0,
           {
               {"give me a minute to change and i 'll meet you at the docks . '' she 'd forced "
                "those words through her teeth . `` no need to change . we wo n't be that long . "
                "'' shane gripped her arm and started leading her to the dock . `` i can make it "
                "there on my own ,",
                " shane"},
           }},
          {0,
           {
               {"`` only one source i know of that would be likely to cough up enough money to "
                "finance a phony sleep research facility and pay people big bucks to solve crimes "
                "in their dreams , '' farrell concluded dryly . `` what can i say ? '' ellis "
                "unfolded his arms and widened his hands . `` your tax dollars at work . '' before "
                "farrell could respond , leila 's voice rose from inside the house . `` no "
                "insurance ? '' she wailed . `` what do you mean you do n't have any",
                " insurance"},
           }},
      });
}

}  // namespace
}  // namespace hgeval::tasks
