#pragma once

/// A data set plugin written in Lua: the DataRequest it is given and the arrays it
/// returns (docs/lua.md, Plugins in Lua). An array is a nested list of numbers, whose
/// shape is read off its nesting, or {type = "float32", shape = {...}, values = {...}}
/// with the values flat or nested; inputs default to float32, labels to int64.

#include <actorpipe/plugin.hpp>

struct lua_State;

namespace actorpipe::lua {

void push_data_request(lua_State* L, const DataRequest& request);

/// {inputs = ..., labels = ..., test_inputs = ..., test_labels = ...}, the test split
/// optional; a mistake is named by its place ("labels[3]: 0.5 is not a whole number").
Result<DataSplits> read_data_splits(lua_State* L, int index);

} // namespace actorpipe::lua
