// (torch/extension.h here has at::parallel_for.)
#pragma once
