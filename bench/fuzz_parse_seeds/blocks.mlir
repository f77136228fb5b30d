// Seed for bench/fuzz_parse.py: a function of several blocks with branches.
func.func @main(%p: i1, %x: tensor<f32>) -> tensor<f32> {
  %n = stablehlo.negate %x : tensor<f32>
  cf.cond_br %p, ^bb1(%n : tensor<f32>), ^bb2
^bb1(%v: tensor<f32>):
  cf.br ^bb3(%v : tensor<f32>)
^bb2:
  %w = stablehlo.exponential %x : tensor<f32>
  cf.br ^bb3(%w : tensor<f32>)
^bb3(%r: tensor<f32>):
  %0 = stablehlo.abs %r : tensor<f32>
  return %0 : tensor<f32>
}
