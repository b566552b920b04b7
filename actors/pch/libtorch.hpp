// The precompiled header of the LibTorch code (runtime/src/train, transport, device):
// parsing LibTorch's headers is half of each of those files' compile, so it is done
// once. Meson builds it per target and includes it first in every file of the target;
// each file still includes what it uses, so a build without precompiled headers
// (-Db_pch=false) compiles the same. It is never included by name.

#include <torch/script.h>
#include <torch/torch.h>
