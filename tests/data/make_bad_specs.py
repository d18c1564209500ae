#!/usr/bin/env python3
# Regenerates the derived malformed specs tests/data/bad_*.json and their
# expected messages bad_*.expect from good_task.json (one change each).
# bad_json_syntax and bad_dup_key are hand-written and not touched.
# Run from tests/data: python3 make_bad_specs.py
import json, copy, collections
base = json.load(open('good_task.json'), object_pairs_hook=collections.OrderedDict)
cases = {}
def case(name, expect, mod):
    d = copy.deepcopy(base); mod(d); cases[name] = (d, expect)

case('missing_field', "bad_missing_field.json: launch: missing required field", lambda d: d.pop('launch'))
case('wrong_type', "bad_wrong_type.json: params.UNROLL.values: expected an array, got a string",
     lambda d: d['params']['UNROLL'].__setitem__('values', "1,2,4"))
case('dtype', "bad_dtype.json: buffers[1].dtype: unknown dtype 'f64' (known: f16 bf16 f32 i32)",
     lambda d: d['buffers'][1].__setitem__('dtype', 'f64'))
case('role', "bad_role.json: buffers[0].role: unknown role 'inout'",
     lambda d: d['buffers'][0].__setitem__('role', 'inout'))
case('default', "bad_default.json: params.BLOCK.default: 96 is not one of the values",
     lambda d: d['params']['BLOCK'].__setitem__('default', 96))
case('empty_values', "bad_empty_values.json: params.SPLITS.values: empty list",
     lambda d: d['params']['SPLITS'].__setitem__('values', []))
case('dup_value', "bad_dup_value.json: params.UNROLL.values[2]: duplicate value 2",
     lambda d: d['params']['UNROLL'].__setitem__('values', [1, 2, 2]))
case('dup_name', "bad_dup_name.json: dims.BLOCK: duplicate name 'BLOCK' (already a param)",
     lambda d: d['dims'].__setitem__('BLOCK', 7))
case('dup_buffer', "bad_dup_buffer.json: buffers[2].name: duplicate name 'X' (already a buffer)",
     lambda d: d['buffers'][2].__setitem__('name', 'X'))
case('device_name', "bad_device_name.json: derived.SM_COUNT: duplicate name 'SM_COUNT' (already a device variable)",
     lambda d: d['derived'].__setitem__('SM_COUNT', '132'))
def uv(d):
    d['params']['BLOCK_M'] = d['params'].pop('BLOCK')
    d['derived']['THREADS'] = 'BLOCK_M'; d['derived']['TILE'] = 'BLOCK_M * UNROLL'
    d['launch'][1]['grid'][0] = 'min(BLOK_M, 4)'
case('unknown_var', "bad_unknown_var.json: launch[1].grid[0]: column 5: unknown variable 'BLOK_M' (did you mean 'BLOCK_M'?)", uv)
case('derived_order', "bad_derived_order.json: derived.THREADS: column 1: unknown variable 'TILE' (derived 'TILE' is defined later)",
     lambda d: d['derived'].__setitem__('THREADS', 'TILE / UNROLL'))
case('expr_syntax', "bad_expr_syntax.json: constraints[0]: column 24: expected ')', found end of expression",
     lambda d: d['constraints'].__setitem__(0, '(THREADS <= MAX_THREADS'))
case('expr_column', "bad_expr_column.json: buffers[2].shape[0]: column 10: expected a number, a name or '(', found '*'",
     lambda d: d['buffers'][2]['shape'].__setitem__(0, 'SPLITS * * 2'))
case('unknown_func', "bad_unknown_func.json: launch[0].grid[0]: column 1: unknown function 'cdiv'",
     lambda d: d['launch'][0]['grid'].__setitem__(0, 'cdiv(N, TILE)'))
case('div_zero', "bad_div_zero.json: constraints[3]: column 3: division by zero (shape 0: M=3 N=1024)",
     lambda d: d['constraints'].append('N / (SPLITS - 1) > 0'))
case('overflow', "bad_overflow.json: derived.BIG: column 27: integer overflow",
     lambda d: d['derived'].__setitem__('BIG', 'N * 10000 * 10000 * 10000 * 10000'))
case('entry', "bad_entry.json: launch[1].entry: 'scale_fix' is not declared in entries",
     lambda d: d['launch'][1].__setitem__('entry', 'scale_fix'))
case('ref_entry', "bad_ref_entry.json: reference.launch[0].entry: 'scale_main' is not declared in reference.entries",
     lambda d: d['reference']['launch'][0].__setitem__('entry', 'scale_main'))
case('arg_buffer', "bad_arg_buffer.json: launch[0].args[1]: column 1: unknown buffer or variable 'YY' (did you mean 'Y'?)",
     lambda d: d['launch'][0]['args'].__setitem__(1, 'YY'))
case('arg_real', "bad_arg_real.json: launch[0].args[4]: a bare number argument must be an integer",
     lambda d: d['launch'][0]['args'].__setitem__(4, 1.5))
case('buffer_in_expr', "bad_buffer_in_expr.json: launch[0].args[3]: column 1: 'X' is a buffer",
     lambda d: d['launch'][0]['args'].__setitem__(3, 'X + 1'))
case('missing_template', "bad_missing_template.json: template: cannot read 'no_such_template.cu'",
     lambda d: d.__setitem__('template', 'no_such_template.cu'))
case('missing_reference', "bad_missing_reference.json: reference.source: cannot read 'no_such_ref.cu'",
     lambda d: d['reference'].__setitem__('source', 'no_such_ref.cu'))
case('shape_dim', "bad_shape_dim.json: shapes[1].K: unknown dim 'K'",
     lambda d: d['shapes'][1].__setitem__('K', 5))
case('compile_dim', "bad_compile_dim.json: compile_dims[0]: unknown dim 'm' (did you mean 'M'?)",
     lambda d: d.__setitem__('compile_dims', ['m']))
case('unknown_field', "bad_unknown_field.json: lauch: unknown field (did you mean 'launch'?)",
     lambda d: d.__setitem__('lauch', []))
case('dist', "bad_dist.json: buffers[0].init.dist: unknown dist 'gauss'",
     lambda d: d['buffers'][0]['init'].__setitem__('dist', 'gauss'))
case('init_output', "bad_init_output.json: buffers[1].init: only inputs have an init",
     lambda d: d['buffers'][1].__setitem__('init', {'dist': 'zero'}))
case('grid_zero', "bad_grid_zero.json: launch[0].grid[1]: value 0 is out of range (1 to 4294967295) (shape 0: M=0 N=1024)",
     lambda d: d['dims'].__setitem__('M', 0))
case('arg_range', "bad_arg_range.json: launch[0].args[3]: value 4294967296 is out of range (-2147483648 to 2147483647)",
     lambda d: d['launch'][0]['args'].__setitem__(3, 'N * 4194304'))
case('grid_count', "bad_grid_count.json: launch[0].grid: expected 1 to 3 entries, got 4",
     lambda d: d['launch'][0]['grid'].append(1))
case('negative_size', "bad_negative_size.json: buffers[2].shape[0]: value -1 is out of range (0 to 9223372036854775807) (shape 0: M=3 N=1024)",
     lambda d: d['buffers'][2]['shape'].__setitem__(0, 'SPLITS - 2'))
case('bad_name', "bad_bad_name.json: params.2X: '2X' is not a valid identifier",
     lambda d: d['params'].__setitem__('2X', {'values': [1], 'default': 1}))
case('float_grid', "bad_float_grid.json: launch[0].grid[0]: expected an integer, got 2.5",
     lambda d: d['launch'][0]['grid'].__setitem__(0, 'N / 409.6'))

case('derived_self', "bad_derived_self.json: derived.SMEM: column 1: derived 'SMEM' refers to itself",
     lambda d: d['derived'].__setitem__('SMEM', 'SMEM + 1'))
case('arg_object', "bad_arg_object.json: launch[0].args[4].f3: unknown field (did you mean 'f32'?)",
     lambda d: d['launch'][0]['args'].__setitem__(4, {'f3': 1.5}))
case('init_const', "bad_init_const.json: buffers[0].init: dist 'const' needs a 'value'",
     lambda d: d['buffers'][0].__setitem__('init', {'dist': 'const'}))
case('not_bool', "bad_not_bool.json: compile.fast_math: expected a boolean, got an integer",
     lambda d: d['compile'].__setitem__('fast_math', 1))
case('stack_limit', "bad_stack_limit.json: compile.max_stack_bytes: out of range",
     lambda d: d['compile'].__setitem__('max_stack_bytes', -8))
case('block_expr_type', "bad_block_expr_type.json: launch[0].block[0]: expected an expression (a string or a number), got an array",
     lambda d: d['launch'][0]['block'].__setitem__(0, [128]))

# input profiles (issue 33)
def prof(*ps):
    return lambda d: d.__setitem__('profiles', list(ps))
case('profiles_empty', "bad_profiles_empty.json: profiles: empty list", prof())
case('profiles_many', "bad_profiles_many.json: profiles: 9 profiles, at most 8",
     prof(*[{'name': f'p{i}'} for i in range(9)]))
case('profile_type', "bad_profile_type.json: profiles[0]: expected an object, got a string", prof('normal'))
case('profile_key', "bad_profile_key.json: profiles[0].timng: unknown field (did you mean 'timing'?)",
     prof({'name': 'a', 'timng': True}))
case('profile_dup', "bad_profile_dup.json: profiles[1].name: duplicate profile name 'a'",
     prof({'name': 'a'}, {'name': 'a', 'timing': False}))
case('profile_name', "bad_profile_name.json: profiles[0].name: 'large logits': a profile name holds letters, digits, '_' and '-' only",
     prof({'name': 'large logits'}))
case('profile_timing', "bad_profile_timing.json: profiles: no profile has \"timing\": true",
     prof({'name': 'a', 'timing': False}))
case('profile_buffer', "bad_profile_buffer.json: profiles[0].inputs.XX: unknown buffer (did you mean 'X'?)",
     prof({'name': 'a', 'inputs': {'XX': {'dist': 'normal'}}}))
case('profile_output', "bad_profile_output.json: profiles[0].inputs.Y: buffer 'Y' is not an input",
     prof({'name': 'a', 'inputs': {'Y': {'dist': 'normal'}}}))
case('outlier_p', "bad_outlier_p.json: profiles[1].inputs.X.p: must be from 0 to 1, got 1.5",
     prof({'name': 'a'}, {'name': 'b', 'inputs': {'X': {'dist': 'outlier', 'p': 1.5}}}))
case('outlier_std', "bad_outlier_std.json: buffers[0].init.outlier_std: must not be negative, got -10",
     lambda d: d['buffers'][0].__setitem__('init', {'dist': 'outlier', 'outlier_std': -10}))
case('init_arg', "bad_init_arg.json: buffers[0].init.low: dist 'normal' takes mean, std, row_scale",
     lambda d: d['buffers'][0].__setitem__('init', {'dist': 'normal', 'low': -1}))
case('init_std', "bad_init_std.json: buffers[0].init.std: must not be negative, got -1",
     lambda d: d['buffers'][0].__setitem__('init', {'dist': 'normal', 'std': -1}))
case('row_dim', "bad_row_dim.json: buffers[0].init.row_scale.dim: 'K' is not an entry of X's shape ('M' 'N')",
     lambda d: d['buffers'][0].__setitem__('init', {'dist': 'normal', 'row_scale': {'dist': 'lognormal', 'dim': 'K'}}))
case('row_nodim', "bad_row_nodim.json: profiles[0].inputs.X.row_scale.dim: missing required field",
     prof({'name': 'a', 'inputs': {'X': {'dist': 'normal', 'row_scale': {'dist': 'lognormal', 'std': 2}}}}))
case('row_dist', "bad_row_dist.json: buffers[0].init.row_scale.dist: unknown dist 'normal' (known: lognormal uniform)",
     lambda d: d['buffers'][0].__setitem__('init', {'dist': 'normal', 'row_scale': {'dist': 'normal', 'dim': 'M'}}))
case('row_uniform', "bad_row_uniform.json: buffers[0].init.row_scale.low: must not be above high (3 > 2)",
     lambda d: d['buffers'][0].__setitem__('init', {'dist': 'normal', 'row_scale': {'dist': 'uniform', 'low': 3, 'high': 2, 'dim': 'N'}}))

# Untrusted input (issue 35): a spec's NVRTC options pass an allow-list,
# its files stay in its directory, its kernel code includes no host file.
case('copt_pch', 'bad_copt_pch.json: compile.options[1]: "--create-pch=/tmp/evoeng.pch": not an allowed NVRTC option',
     lambda d: d['compile'].__setitem__('options', ['-std=c++17', '--create-pch=/tmp/evoeng.pch']))
case('copt_time', 'bad_copt_time.json: compile.options[0]: "--time=/tmp/evoeng-time.csv": not an allowed NVRTC option',
     lambda d: d['compile'].__setitem__('options', ['--time=/tmp/evoeng-time.csv']))
case('copt_include', 'bad_copt_include.json: compile.options[0]: "-I/etc": not an allowed NVRTC option',
     lambda d: d['compile'].__setitem__('options', ['-I/etc']))
case('copt_std', 'bad_copt_std.json: compile.options[0]: "-std=c++14": only -std=c++17 and -std=c++20 are allowed',
     lambda d: d['compile'].__setitem__('options', ['-std=c++14']))
case('copt_shell', 'bad_copt_shell.json: compile.options[0]: "-DX=$(id)": expected -DNAME or -DNAME=VALUE',
     lambda d: d['compile'].__setitem__('options', ['-DX=$(id)']))
case('template_abs', "bad_template_abs.json: template: '/etc/passwd' is outside the task's directory",
     lambda d: d.__setitem__('template', '/etc/passwd'))
case('template_dotdot', "bad_template_dotdot.json: template: '../../../../../../../../etc/passwd' is outside the task's directory",
     lambda d: d.__setitem__('template', '../../../../../../../../etc/passwd'))
case('template_proc', "bad_template_proc.json: template: '/proc/self/environ' is under /proc, /sys or /dev: evoeng never reads there",
     lambda d: d.__setitem__('template', '/proc/self/environ'))
case('ref_outside', "bad_ref_outside.json: reference.source: '../meson.build' is outside the task's directory",
     lambda d: d['reference'].__setitem__('source', '../meson.build'))
case('include_abs', "bad_include_abs.json: template: bad_include_abs.cu line 2: '#include \"/etc/passwd\"': refused: an absolute path",
     lambda d: d.__setitem__('template', 'bad_include_abs.cu'))
case('include_macro', "bad_include_macro.json: template: bad_include_macro.cu line 3: '#include EVIL': a computed #include",
     lambda d: d.__setitem__('template', 'bad_include_macro.cu'))

for name, (d, expect) in cases.items():
    with open(f'bad_{name}.json', 'w') as f:
        json.dump(d, f, indent=2); f.write('\n')
    with open(f'bad_{name}.expect', 'w') as f:
        f.write(expect + '\n')
print(len(cases))
