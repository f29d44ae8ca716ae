#include "engine/loader/torch_pickle.h"

#include <cstring>
#include <map>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

struct Value;
using ValuePtr = std::shared_ptr<Value>;

struct Value {
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kTuple,
    kList,
    kDict,
    kGlobal,
    kStorage,
    kTensor
  };
  Kind kind = Kind::kNone;
  int64_t integer = 0;                                 // kBool, kInt
  double real = 0;                                     // kFloat
  std::string text;                                    // kString; kGlobal: "module.name"
  std::vector<ValuePtr> items;                         // kTuple, kList
  std::vector<std::pair<ValuePtr, ValuePtr>> entries;  // kDict, in insertion order
  PickledTensor tensor;  // kStorage: dtype, key and numel; kTensor: the whole view
};

ValuePtr Make(Value::Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}

// The torch.*Storage class names and the element type each holds.
bool StorageDType(std::string_view global, DType* dtype) {
  static const std::map<std::string_view, DType> kTypes = {
      {"torch.FloatStorage", DType::kF32}, {"torch.BFloat16Storage", DType::kBF16},
      {"torch.HalfStorage", DType::kF16},  {"torch.DoubleStorage", DType::kF64},
      {"torch.LongStorage", DType::kI64},  {"torch.IntStorage", DType::kI32},
      {"torch.CharStorage", DType::kI8},   {"torch.ByteStorage", DType::kU8},
      {"torch.BoolStorage", DType::kBool}};
  auto it = kTypes.find(global);
  if (it == kTypes.end()) return false;
  *dtype = it->second;
  return true;
}

class Unpickler {
 public:
  Unpickler(std::string_view file, absl::Span<const uint8_t> data) : file_(file), data_(data) {}

  absl::StatusOr<ValuePtr> Run() {
    while (true) {
      HG_ASSIGN_OR_RETURN(uint8_t op, Byte());
      switch (op) {
        case 0x80:  // PROTO
          HG_RETURN_IF_ERROR(Bytes(1).status());
          break;
        case 0x95:  // FRAME: a length we do not need
          HG_RETURN_IF_ERROR(Bytes(8).status());
          break;
        case '.':  // STOP
          if (stack_.size() != 1) {
            return Error("STOP with a stack of " + std::to_string(stack_.size()));
          }
          return stack_.back();
        case '(':  // MARK
          marks_.push_back(stack_.size());
          break;
        case 'N':
          stack_.push_back(Make(Value::Kind::kNone));
          break;
        case 0x88:    // NEWTRUE
        case 0x89: {  // NEWFALSE
          ValuePtr v = Make(Value::Kind::kBool);
          v->integer = op == 0x88;
          stack_.push_back(v);
          break;
        }
        case 'K':  // BININT1
          HG_RETURN_IF_ERROR(PushInt(1, false));
          break;
        case 'M':  // BININT2
          HG_RETURN_IF_ERROR(PushInt(2, false));
          break;
        case 'J':  // BININT
          HG_RETURN_IF_ERROR(PushInt(4, true));
          break;
        case 0x8a: {  // LONG1
          HG_ASSIGN_OR_RETURN(uint8_t n, Byte());
          HG_RETURN_IF_ERROR(PushInt(n, true));
          break;
        }
        case 'G': {  // BINFLOAT, big-endian
          HG_ASSIGN_OR_RETURN(absl::Span<const uint8_t> b, Bytes(8));
          uint64_t bits = 0;
          for (uint8_t c : b) bits = bits << 8 | c;
          ValuePtr v = Make(Value::Kind::kFloat);
          std::memcpy(&v->real, &bits, sizeof(bits));
          stack_.push_back(v);
          break;
        }
        case 'X':  // BINUNICODE
        case 'T':  // BINSTRING
        case 'B':  // BINBYTES
          HG_RETURN_IF_ERROR(PushString(4));
          break;
        case 0x8c:  // SHORT_BINUNICODE
        case 'U':   // SHORT_BINSTRING
        case 'C':   // SHORT_BINBYTES
          HG_RETURN_IF_ERROR(PushString(1));
          break;
        case 0x8d:  // BINUNICODE8
        case 0x8e:  // BINBYTES8
          HG_RETURN_IF_ERROR(PushString(8));
          break;
        case ')':
          stack_.push_back(Make(Value::Kind::kTuple));
          break;
        case ']':
          stack_.push_back(Make(Value::Kind::kList));
          break;
        case '}':
          stack_.push_back(Make(Value::Kind::kDict));
          break;
        case 't':    // TUPLE
        case 'l': {  // LIST
          HG_ASSIGN_OR_RETURN(std::vector<ValuePtr> items, PopToMark());
          ValuePtr v = Make(op == 't' ? Value::Kind::kTuple : Value::Kind::kList);
          v->items = std::move(items);
          stack_.push_back(v);
          break;
        }
        case 0x85:  // TUPLE1..3
        case 0x86:
        case 0x87: {
          const size_t n = op - 0x84;
          if (stack_.size() < n + Floor()) return Error("TUPLE with too few items");
          ValuePtr v = Make(Value::Kind::kTuple);
          v->items.assign(stack_.end() - n, stack_.end());
          stack_.resize(stack_.size() - n);
          stack_.push_back(v);
          break;
        }
        case 'd': {  // DICT
          HG_ASSIGN_OR_RETURN(std::vector<ValuePtr> items, PopToMark());
          ValuePtr v = Make(Value::Kind::kDict);
          HG_RETURN_IF_ERROR(AddPairs(*v, items));
          stack_.push_back(v);
          break;
        }
        case 's': {  // SETITEM
          if (stack_.size() < 3 + Floor()) return Error("SETITEM on a short stack");
          std::vector<ValuePtr> pair(stack_.end() - 2, stack_.end());
          stack_.resize(stack_.size() - 2);
          HG_RETURN_IF_ERROR(AddPairs(*stack_.back(), pair));
          break;
        }
        case 'u': {  // SETITEMS
          HG_ASSIGN_OR_RETURN(std::vector<ValuePtr> items, PopToMark());
          if (stack_.empty()) return Error("SETITEMS without a dict");
          HG_RETURN_IF_ERROR(AddPairs(*stack_.back(), items));
          break;
        }
        case 'a':    // APPEND
        case 'e': {  // APPENDS
          std::vector<ValuePtr> items;
          if (op == 'e') {
            HG_ASSIGN_OR_RETURN(items, PopToMark());
          } else {
            if (stack_.size() < 2 + Floor()) return Error("APPEND on a short stack");
            items.push_back(stack_.back());
            stack_.pop_back();
          }
          if (stack_.empty() || stack_.back()->kind != Value::Kind::kList) {
            return Error("APPEND to something that is not a list");
          }
          for (ValuePtr& item : items) stack_.back()->items.push_back(std::move(item));
          break;
        }
        case 'c': {  // GLOBAL "module\nname\n"
          HG_ASSIGN_OR_RETURN(std::string module, Line());
          HG_ASSIGN_OR_RETURN(std::string name, Line());
          PushGlobal(module, name);
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          if (stack_.size() < 2 + Floor() || stack_.back()->kind != Value::Kind::kString ||
              stack_[stack_.size() - 2]->kind != Value::Kind::kString) {
            return Error("STACK_GLOBAL without two strings");
          }
          const std::string name = stack_.back()->text;
          const std::string module = stack_[stack_.size() - 2]->text;
          stack_.resize(stack_.size() - 2);
          PushGlobal(module, name);
          break;
        }
        case 'Q': {  // BINPERSID: a storage reference
          HG_ASSIGN_OR_RETURN(ValuePtr id, Pop());
          HG_ASSIGN_OR_RETURN(ValuePtr storage, Storage(*id));
          stack_.push_back(storage);
          break;
        }
        case 'R': {  // REDUCE
          HG_ASSIGN_OR_RETURN(ValuePtr args, Pop());
          HG_ASSIGN_OR_RETURN(ValuePtr callable, Pop());
          HG_ASSIGN_OR_RETURN(ValuePtr result, Call(*callable, *args));
          stack_.push_back(result);
          break;
        }
        case 'b': {  // BUILD: the state of an OrderedDict (_metadata) or a tensor is not needed
          HG_ASSIGN_OR_RETURN(ValuePtr state, Pop());
          if (stack_.size() <= Floor() || (stack_.back()->kind != Value::Kind::kDict &&
                                           stack_.back()->kind != Value::Kind::kTensor)) {
            return Error("BUILD on an object that is neither a dict nor a tensor");
          }
          break;
        }
        case 'q':     // BINPUT
        case 'r':     // LONG_BINPUT
        case 0x94: {  // MEMOIZE
          uint64_t index = memo_.size();
          if (op != 0x94) {
            HG_ASSIGN_OR_RETURN(index, Unsigned(op == 'q' ? 1 : 4));
          }
          if (stack_.empty()) return Error("memo store on an empty stack");
          memo_[index] = stack_.back();
          break;
        }
        case 'h':    // BINGET
        case 'j': {  // LONG_BINGET
          HG_ASSIGN_OR_RETURN(uint64_t index, Unsigned(op == 'h' ? 1 : 4));
          auto it = memo_.find(index);
          if (it == memo_.end()) return Error(absl::StrCat("memo entry ", index, " is not set"));
          stack_.push_back(it->second);
          break;
        }
        case '0':  // POP
          HG_RETURN_IF_ERROR(Pop().status());
          break;
        case '1':  // POP_MARK
          HG_RETURN_IF_ERROR(PopToMark().status());
          break;
        case '2':  // DUP
          if (stack_.size() <= Floor()) return Error("DUP on an empty stack");
          stack_.push_back(stack_.back());
          break;
        default:
          return Error(
              absl::StrFormat("opcode 0x%02x is not one a state dict of tensors uses", op));
      }
    }
  }

 private:
  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(file_, ": not a PyTorch state dict pickle (at byte ", at_, "): ", what));
  }

  absl::StatusOr<absl::Span<const uint8_t>> Bytes(uint64_t n) {
    if (n > data_.size() - at_) return Error("the pickle ends early");
    absl::Span<const uint8_t> b = data_.subspan(at_, n);
    at_ += n;
    return b;
  }
  absl::StatusOr<uint8_t> Byte() {
    HG_ASSIGN_OR_RETURN(absl::Span<const uint8_t> b, Bytes(1));
    return b[0];
  }
  absl::StatusOr<uint64_t> Unsigned(size_t n) {
    HG_ASSIGN_OR_RETURN(absl::Span<const uint8_t> b, Bytes(n));
    uint64_t value = 0;
    for (size_t i = 0; i < n; ++i) value |= static_cast<uint64_t>(b[i]) << (8 * i);
    return value;
  }
  absl::StatusOr<std::string> Line() {
    const size_t begin = at_;
    while (at_ < data_.size() && data_[at_] != '\n') ++at_;
    if (at_ == data_.size()) return Error("GLOBAL without a newline");
    std::string line(reinterpret_cast<const char*>(&data_[begin]), at_ - begin);
    ++at_;
    return line;
  }

  // Little-endian integers of n bytes, two's complement when `is_signed`.
  absl::Status PushInt(size_t n, bool is_signed) {
    if (n > 8) return Error(absl::StrCat("an integer of ", n, " bytes"));
    HG_ASSIGN_OR_RETURN(uint64_t bits, Unsigned(n));
    if (is_signed && n > 0 && n < 8 && (bits >> (8 * n - 1)) & 1) bits |= ~0ull << (8 * n);
    ValuePtr v = Make(Value::Kind::kInt);
    v->integer = static_cast<int64_t>(bits);
    stack_.push_back(v);
    return absl::OkStatus();
  }
  absl::Status PushString(size_t length_bytes) {
    HG_ASSIGN_OR_RETURN(uint64_t length, Unsigned(length_bytes));
    HG_ASSIGN_OR_RETURN(absl::Span<const uint8_t> b, Bytes(length));
    ValuePtr v = Make(Value::Kind::kString);
    v->text.assign(reinterpret_cast<const char*>(b.data()), b.size());
    stack_.push_back(v);
    return absl::OkStatus();
  }
  void PushGlobal(const std::string& module, const std::string& name) {
    ValuePtr v = Make(Value::Kind::kGlobal);
    v->text = absl::StrCat(module, ".", name);
    stack_.push_back(v);
  }

  // The lowest stack index the current mark region may pop to.
  size_t Floor() const { return marks_.empty() ? 0 : marks_.back(); }
  absl::StatusOr<ValuePtr> Pop() {
    if (stack_.size() <= Floor()) return Error("pop from an empty stack");
    ValuePtr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  absl::StatusOr<std::vector<ValuePtr>> PopToMark() {
    if (marks_.empty()) return Error("no MARK to pop to");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<ValuePtr> items(stack_.begin() + mark, stack_.end());
    stack_.resize(mark);
    return items;
  }
  absl::Status AddPairs(Value& dict, const std::vector<ValuePtr>& items) {
    if (dict.kind != Value::Kind::kDict) return Error("SETITEM on something that is not a dict");
    if (items.size() % 2 != 0) return Error("an odd number of dict items");
    for (size_t i = 0; i < items.size(); i += 2) dict.entries.emplace_back(items[i], items[i + 1]);
    return absl::OkStatus();
  }

  // ('storage', torch.<Type>Storage, key, location, numel)
  absl::StatusOr<ValuePtr> Storage(const Value& id) {
    const auto& f = id.items;
    if (id.kind != Value::Kind::kTuple || f.size() != 5 || f[0]->kind != Value::Kind::kString ||
        f[0]->text != "storage" || f[1]->kind != Value::Kind::kGlobal ||
        f[2]->kind != Value::Kind::kString || f[4]->kind != Value::Kind::kInt ||
        f[4]->integer < 0) {
      return Error("a persistent id that is not ('storage', type, key, location, numel)");
    }
    ValuePtr v = Make(Value::Kind::kStorage);
    if (!StorageDType(f[1]->text, &v->tensor.dtype)) {
      return Error(absl::StrCat("storage type ", f[1]->text, " is not supported"));
    }
    v->tensor.storage_key = f[2]->text;
    v->tensor.storage_numel = f[4]->integer;
    return v;
  }

  absl::StatusOr<std::vector<int64_t>> IntTuple(const Value& v, const std::string& what) {
    if (v.kind != Value::Kind::kTuple && v.kind != Value::Kind::kList) {
      return Error(absl::StrCat("tensor ", what, " is not a tuple"));
    }
    std::vector<int64_t> out;
    for (const ValuePtr& item : v.items) {
      if (item->kind != Value::Kind::kInt || item->integer < 0) {
        return Error(absl::StrCat("tensor ", what, " holds a non-integer or negative value"));
      }
      out.push_back(item->integer);
    }
    return out;
  }

  absl::StatusOr<ValuePtr> Call(const Value& callable, const Value& args) {
    if (callable.kind != Value::Kind::kGlobal || args.kind != Value::Kind::kTuple) {
      return Error("REDUCE on something that is not a known callable with a tuple");
    }
    const std::string& name = callable.text;
    const auto& a = args.items;
    if (name == "collections.OrderedDict" && a.empty()) return Make(Value::Kind::kDict);
    if (name == "torch._utils._rebuild_parameter" && a.size() == 3 &&
        a[0]->kind == Value::Kind::kTensor) {
      return a[0];
    }
    if (name == "torch._utils._rebuild_tensor_v2" && a.size() >= 4 &&
        a[0]->kind == Value::Kind::kStorage && a[1]->kind == Value::Kind::kInt &&
        a[1]->integer >= 0) {
      ValuePtr t = Make(Value::Kind::kTensor);
      t->tensor = a[0]->tensor;
      t->tensor.storage_offset = a[1]->integer;
      HG_ASSIGN_OR_RETURN(t->tensor.shape, IntTuple(*a[2], "size"));
      HG_ASSIGN_OR_RETURN(t->tensor.stride, IntTuple(*a[3], "stride"));
      if (t->tensor.shape.size() != t->tensor.stride.size()) {
        return Error("tensor size and stride differ in rank");
      }
      return t;
    }
    return Error(absl::StrCat("calls ", name, " (", a.size(),
                              " arguments); only state dicts of tensors are read"));
  }

  std::string file_;
  absl::Span<const uint8_t> data_;
  size_t at_ = 0;
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;
  absl::flat_hash_map<uint64_t, ValuePtr> memo_;
};

}  // namespace

absl::StatusOr<std::vector<PickledTensor>> ParseTorchStateDictPickle(
    std::string_view file, absl::Span<const uint8_t> pickle) {
  HG_ASSIGN_OR_RETURN(ValuePtr root, Unpickler(file, pickle).Run());
  if (root->kind != Value::Kind::kDict) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(file), ": the pickle holds no state dict (a mapping of names to tensors)"));
  }
  std::vector<PickledTensor> tensors;
  for (const auto& [key, value] : root->entries) {
    if (key->kind != Value::Kind::kString) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(file), ": a state dict key is not a string"));
    }
    if (value->kind != Value::Kind::kTensor) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(file), ": state dict entry '", key->text, "' is not a tensor"));
    }
    PickledTensor t = value->tensor;
    t.name = key->text;
    tensors.push_back(std::move(t));
  }
  return tensors;
}

}  // namespace hgeval
