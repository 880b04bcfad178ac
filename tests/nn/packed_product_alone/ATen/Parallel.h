// (ATen/ATen.h here has at::parallel_for.)
#pragma once
