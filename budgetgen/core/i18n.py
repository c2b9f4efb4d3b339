"""Chinese for every input name and value and every visible output text, declared once.

English is the key: the code keeps writing its English words, `tr` and `name` render them in the
chosen language, and the reader maps Chinese (or English) back to the canonical ASCII names.
Warnings and input problems are `Message`s: English text that remembers its template and parameters.
"""

from __future__ import annotations

import string
from typing import Any, Self, TypeVar

from .schema import (
    COMMITMENT_SETTINGS,
    COMMITMENT_TIERS,
    DRIVERS,
    SCENARIO_COLUMNS,
    TASK_KINDS,
    TIERS,
    Column,
    normalise_header,
)

LANGS = ("en", "zh")

# Input sheet names. Output sheets keep their ASCII names: formulas refer to them.
SHEETS_ZH = {"Settings": "设置", "GPUs": "GPU", "Tasks": "任务", "Extras": "额外费用", "Bills": "账单",
             "Usage": "用量", "Assignments": "分配", "Models": "模型", "FX": "汇率",
             "Scenarios": "情景", "Budgets": "预算", "Ramp": "渐进"}

# Column names of every input sheet and the setting keys (one word each, whatever sheet it is on).
NAMES_ZH = {
    "setting": "设置项", "value": "值", "note": "备注",
    "gpu": "GPU型号", "class": "卡类别", "vram_gb": "显存GB", "bandwidth_gbs": "显存带宽GBs", "tflops": "算力TFLOPS",
    "interconnect": "互联", "scaling": "扩展效率",
    **{t.price_column: t.price_zh for t in TIERS}, **{t.cap_setting: t.zh + "上限" for t in TIERS},
    **{t.discount_setting: t.zh + "折扣" for t in COMMITMENT_TIERS},
    "purchase_price": "购买价格", "power_w": "功耗W", "provider": "供应商", "region": "区域", "source": "来源",
    "as_of": "价格日期", "rate": "汇率值",
    "task_id": "任务编号", "task": "任务描述", "kind": "类型", "model_params_b": "模型参数量B", "method": "方法",
    "train_tokens": "训练token数", "epochs": "轮数", "runs_per_month": "每月运行次数", "requests_per_day": "每日请求数",
    "batch_requests": "每批请求数", "tokens_per_request": "每请求token数", "serving_hours_per_day": "每日服务小时",
    "tokens_per_sec": "每秒token数", "concurrency": "并发数", "kv_cache_gb": "KV缓存GB", "cards": "卡数",
    "tier": "计费方式", "mfu": "算力利用率", "start_month": "开始月份", "end_month": "结束月份",
    "cost_center": "成本中心", "growth_per_month": "月增长率", "pue": "电能使用效率", "colocation_per_kw_month": "每千瓦月托管费", "residual_value": "残值率", "discount_rate": "折现率", "monthly_budget": "月预算", "price_change_per_year": "年价格变化率", "api_price_per_m_tokens": "API每百万token价格", "item": "项目", "category": "费用类别", "monthly_cost": "月费用",
    "resource_id": "资源编号",
    "currency": "币种", "catalog_fx": "目录汇率", "build_date": "编制日期", "period_start": "起始月份",
    "period_months": "计划月数", "hours_per_month": "每月小时数", "flops_per_token": "每token浮点运算",
    "run_overhead": "运行开销", "debug_overhead": "调试开销", "setup_hours": "准备小时", "usable_vram": "可用显存比例",
    "activation_gb_per_b": "激活显存每B", "lora_trainable": "LoRA可训练比例", "inference_overhead": "推理显存开销",
    "decode_efficiency": "解码效率", "peak_factor": "峰值系数", "spot_overhead": "竞价开销",
    "hidden_cost_buffer": "隐性成本缓冲", "gpu_choice": "GPU选择方式",
    "consumer_online": "在线服务用消费级卡", "max_cards": "最大卡数",
    "offer_currency": "报价币种", "providers": "供应商范围", "regions": "地区范围",
    "monthly_offer": "包月报价来源", "on_demand_offer": "按需报价来源", "idle_offer": "闲置报价来源",
    "spot_offer": "竞价报价来源",
    "low_util_threshold": "低利用率阈值", "oom_threshold": "OOM阈值", "variance_tolerance": "偏差容忍度",
    "gpu_line_pattern": "GPU账单行模式", "billing_timezone": "账单时区", "recon_memory_limit": "对账内存上限", "recon_top_resources": "对账表列出的资源数", "recon_spike_factor": "日费用突增倍数", "candidates_per_task": "每任务列出的候选卡数",
    "electricity_per_kwh": "电价每千瓦时", "depreciation_years": "折旧年数",
    "upkeep_per_year": "每年维护费",
    "tflops_fp8": "FP8算力TFLOPS", "tflops_fp4": "FP4算力TFLOPS", "form_factor": "板卡形态",
    "model": "模型", "active_params_b": "激活参数量B", "deadline_days": "截止天数", "prompt_tokens": "输入token数",
    "context_tokens": "上下文token数", "min_replicas": "最少副本数",
    "total_params_b": "总参数量B", "layers": "层数", "hidden": "隐藏维度", "attn_heads": "注意力头数",
    "kv_heads": "KV头数", "head_dim": "头维度", "kv_latent": "KV潜在维度", "native_context": "原生上下文长度", "vocab_size": "词表大小",
    "step_overhead_ms": "解码步固定开销毫秒", "decode_mfu": "解码算力利用率", "prefill_mfu": "预填充算力利用率",
    "fp8_efficiency": "FP8效率", "tp_efficiency": "张量并行效率", "max_batch_per_card": "每卡最大批量",
    "min_batch": "最小批量", "kv_cache_dtype": "KV缓存精度", "default_prompt_tokens": "默认输入token数",
    "kv_fallback_bytes": "KV缓存估算字节", "moe_mfu": "MoE算力利用率", "lora_flops_per_token": "LoRA每token浮点运算",
    "qlora_flops_per_token": "QLoRA每token浮点运算", "micro_batch_tokens": "微批token数",
    "lora_workspace_gb": "LoRA工作空间GB",
    "train_precision": "训练精度", "bandwidth_efficiency": "带宽效率", "matmul_efficiency": "矩阵算力效率",
    "training_efficiency": "训练算力效率",
    "experts": "专家数", "experts_per_token": "每token专家数",
    "driver": "驱动因素", "low": "低", "base": "基准", "high": "高",
    "tp_efficiency_nvlink": "NVLink张量并行效率", "allreduce_us_nvlink": "NVLink全归约微秒",
    "allreduce_us_pcie": "PCIe全归约微秒", "nvlink_gbs": "NVLink带宽GBs", "pcie_gbs": "PCIe带宽GBs",
    "moe_layer_overhead_us": "MoE每层开销微秒", "train_fp8_efficiency": "训练FP8效率", "lora_mfu": "LoRA算力利用率",
    "moe_network_gbs": "MoE网络带宽GBs", "moe_comm_exposed": "MoE通信暴露比例",
    "optimizer": "优化器", "ttft_ms": "首token目标毫秒", "tpot_ms": "每token目标毫秒",
    "adam_state_bytes": "AdamW状态字节", "adam_8bit_state_bytes": "8位AdamW状态字节",
    "cpu_offload_slowdown": "CPU卸载减速倍数",
    "activation_checkpointing": "激活检查点", "layer_activation_bytes": "每层激活字节",
    "logit_bytes": "每logit字节", "fallback_vocab_size": "后备词表大小",
    "qlora_activation_bytes": "QLoRA每层额外激活字节",
    "scale_free_cards": "无规模损失卡数", "scale_efficiency": "规模效率",
    "kv_read_efficiency": "KV读取效率", "tp_reference_params_b": "张量并行参考每卡参数量B", "tp_size_exponent": "张量并行规模指数",
    "train_fp4_efficiency": "训练FP4效率",
}

# Enumeration values: kinds, tiers, methods, GPU classes, extra categories, gpu_choice. Values without an
# entry (lora, qlora, fp16, int8, int4, nvlink, pcie) read the same in both languages.
VALUES_ZH = {
    **{k.name: k.zh for k in TASK_KINDS}, **{t.name: t.zh for t in TIERS},
    "full": "全量",
    "consumer": "消费级", "workstation": "工作站", "datacenter": "数据中心",
    "storage": "存储", "network": "网络", "egress": "出网流量", "images": "镜像", "platform": "平台", "other": "其他",
    "cheapest": "最便宜", "balanced": "均衡", "excluded": "排除", "allowed": "允许", "yes": "是", "no": "否",
    # values formulas produce, shown through the workbook's WordShown lookup
    "OVER": "超上限", "ok": "正常", "buy": "购买", "rent": "租用",
    # Recon flags
    "low_utilization": "低利用率", "oom": "显存溢出", "data_starved": "数据饥饿", "over_plan": "超计划",
    "untagged_gpu": "未标记GPU", "off_plan_pricing": "计划外计价",
    # Recon statuses
    "over plan": "超出计划", "partial month": "不完整月份",
}

# Visible output texts: headers, units, row labels, the How-to-read lines, the CLI's lines.
TEXT_ZH = {
    # unit costs, demand ramps and scenarios
    "cost per million output tokens": "每百万输出token成本", "cost per thousand requests": "每千次请求成本",
    "currency/M tokens": "货币/百万token", "currency/k requests": "货币/千次请求", "output tokens a month": "每月输出token",
    "requests": "请求", "requests a month": "每月请求数", "self-host or API": "自建还是API",
    "demand growth a month, compounded from start_month: an online service's requests per day, a training or batch "
    "task's runs; -0.05 shrinks 5% a month": "每月需求增长率，自 start_month 起复利计算：在线服务的每日请求数，训练或批量任务的运行次数；"
    "-0.05 表示每月减少 5%",
    "what an API would charge per million output tokens, in the plan currency; gives a self-host-versus-API verdict "
    "against the planned unit cost (serving tasks)": "API 每百万输出 token 的价格（计划货币）；与计划单位成本比较，给出自建还是用 API 的结论（服务类任务）",
    "expected yearly change of this GPU's rental prices, applied month by month from the plan's first month (-0.2: "
    "20% cheaper a year on); blank: 0; commitment rates stay as contracted":
    "该 GPU 租用价格的预期年变化率，自计划首月起按月复利应用（-0.2：一年后便宜 20%）；留空：0；承诺价格按合同不变",
    "Budgets: the plan against the budget, month by month": "预算：逐月比较计划与预算",
    "The whole plan's budget is held against each month's total (GPU, commitments, extras, buffer); a cost center's "
    "against the GPU cost of its tasks that month (Monthly). The budgets are inputs.":
    "整个计划的预算与每月合计（GPU、承诺、额外费用、缓冲）比较；成本中心的预算与其任务当月的 GPU 成本（月度表）比较。预算为输入值。",
    "plan": "计划", "over budget by": "超出预算", "over budget?": "超预算？",
    "(no Budgets sheet in the input)": "（输入中没有预算表）", "months over budget": "超预算月数",
    "months over budget (Budgets)": "超预算月数（见预算表）", "the whole plan": "整个计划",
    "Error: the period total {total} is above --max-total {limit}": "错误：计划期合计 {total} 高于 --max-total {limit}",
    "Error: over budget: {lines}": "错误：超出预算：{lines}",
    "a cost_center of the Tasks sheet; blank: the whole plan (every month's total)": "任务表中的成本中心；留空：整个计划（每月合计）",
    "the budget of every plan month: against the month's total for the whole plan, against the GPU cost of the cost "
    "center's tasks for a cost center": "每个计划月的预算：整个计划与当月合计比较，成本中心与其任务的 GPU 成本比较",
    "who set the budget": "预算制定者",
    "break-even utilisation": "盈亏平衡利用率",
    "power usage effectiveness of the room owned machines stand in: the electricity and colocation of a card are its "
    "power_w times this (1.0: power_w already counts cooling; 1.3-1.6 typical)":
    "自有机器所在机房的电能使用效率（PUE）：一张卡的电费和托管按 power_w 乘以该值计（1.0：power_w 已含制冷；常见 1.3-1.6）",
    "colocation rent of owned machines per kW of power (at the PUE) and month, paid whether busy or not":
    "自有机器每千瓦（按 PUE 计）每月的托管费，无论是否使用都要支付",
    "share of the purchase price an owned machine fetches at the end of depreciation_years":
    "自有机器在折旧年限结束时可卖回的购买价比例",
    "yearly cost of capital: owning's fixed cost is the purchase less the discounted residual value as a level monthly "
    "payment over depreciation_years (Excel PMT)": "年资金成本：自有的固定成本为购买价减去折现残值，在折旧年限内按月等额支付（Excel PMT）",
    "demand factor": "需求系数", "ramp (input)": "渐进倍数（输入）",
    "the task the row ramps": "该行渐进的任务",
    "one column per plan month (headed by the month): the month's demand over the demand typed on Tasks, instead of "
    "the growth (0: the task pauses); blank: the growth": "每个计划月一列（表头为月份）：当月需求相对任务表所填需求的倍数，代替增长率（0：任务暂停）；留空：按增长率", "GPU-hours": "GPU小时",
    "growth a month": "月增长率", "online?": "在线？", "per card-month?": "按卡月计费？", "requests a day": "每日请求数",
    "serving hours a day": "每日服务小时", "min replicas": "最少副本数",
    "cards per replica/run": "每副本/每次运行卡数", "training?": "训练？",
    "prices in another currency?": "价格为其他货币？", "scenario demand x": "情景需求倍数", "scenario price x": "情景价格倍数",
    "card-months held": "持有卡月", "card-months billed": "计费卡月", "GPU-hours over the plan": "计划期GPU小时",
    "A month's demand is the task's typed demand times (1 + growth a month) to the months since its start, or the "
    "ramp typed for the month, times the scenario's multiplier; 0 outside its months. An online service's replicas "
    "are sized again for the month's requests; a training or batch task's runs follow the factor, each run the same "
    "size.": "某月需求 = 任务填写的需求 ×（1 + 月增长率）^（自开始以来的月数）或当月填写的渐进倍数，再乘以情景倍数；活跃月份之外为 0。"
    "在线服务按当月请求重新计算副本数；训练或批量任务的运行次数随系数变化，每次运行规模不变。",
    "Scenarios: low, base and high, and what moves the total most": "情景：低、基准、高，以及对总额影响最大的因素",
    "Demand and price values multiply what Tasks and GPUs say (1: as typed); buffer values are rates. A task's own row "
    "wins over the row for every task. The selector on Summary (the named cell Scenario) chooses the column the whole "
    "workbook computes with. The totals side by side and the tornado are computed by the build (each Scenarios row "
    "moved alone to its low and high value, the others at base); build again after editing.":
    "需求和价格的值是任务表和 GPU 表数值的倍数（1：按填写值）；缓冲的值是比率。任务自己的行优先于适用所有任务的行。"
    "汇总表上的选择器（名称 Scenario）决定整个工作簿采用哪一列。并列的合计和龙卷风图由生成时计算（每行情景单独取低值和高值，"
    "其余取基准值）；修改后请重新生成。",
    "driver": "驱动因素", "low": "低", "base": "基准", "high": "高", "source": "来源",
    "hidden-cost buffer in the chosen scenario": "所选情景的隐性成本缓冲", "scenario": "情景",
    "period total": "计划期合计", "change vs base": "相对基准的变化",
    "the scenario chosen on Summary (live)": "汇总表所选情景（实时）", "tornado: row moved alone": "龙卷风：单独变动的行",
    "total at low": "取低值时合计", "total at high": "取高值时合计", "change at low": "取低值时变化",
    "change at high": "取高值时变化", "swing": "摆幅",
    "Tornado: change in the period total, largest first": "龙卷风图：计划期合计的变化，从大到小",
    "Scenario (low, base, high)": "情景（low、base、high）", "every task": "所有任务",
    "(no Scenarios sheet in the input: every multiplier is 1)": "（输入中没有情景表：所有倍数均为 1）",
    # calculated columns (columns.Calc.header) and units
    "MFU used": "所用MFU", "weights": "权重", "VRAM needed": "所需显存",
    "cards min": "最少卡数", "cards per run/replica": "每次运行/副本卡数", "speedup": "加速比",
    "FLOPs per run": "每次运行FLOPs", "compute hours (wall)": "计算小时（墙钟）", "compute GPU-hours": "计算GPU小时",
    "output tokens per day (batch: per run)": "每日输出token数（批量：每次运行）",
    "output tokens/s per replica": "每副本输出token/s",
    "parameters used": "所用参数量", "active parameters": "激活参数量", "bytes per weight": "每权重字节",
    "KV cache per token": "每token KV缓存", "prompt used": "所用输入", "context used": "所用上下文",
    "training FLOPs per parameter and token": "每参数每token训练FLOPs", "matmul peak used": "所用矩阵峰值算力",
    "MFU of the run": "运行MFU", "bandwidth share reached": "达到的带宽比例", "weights read per step": "每步读取权重",
    "decode step, per-layer overhead": "解码步每层开销",
    "parameters a further sequence may add to a step": "每多一个序列解码步可能多读的参数",
    "training state per parameter on a card": "每张卡上每参数训练状态", "activations on every card": "每张卡的激活",
    "optimizer slowdown": "优化器减速", "memory a card offers training": "单卡可供训练的显存",
    "decode step, per-layer fixed time": "解码步每层固定时间",
    "decode step, per-layer time a sequence adds": "解码步每个序列增加的每层时间",
    "decode step the latency targets allow": "延迟目标允许的解码步时间",
    "sequences the latency targets allow": "延迟目标允许的序列数",
    "whether a training run recomputes its activations in the backward pass (a task's activation_checkpointing "
    "overrides it): yes as torchtune's recipes (enable_activation_checkpointing: True), Hugging Face and Unsloth "
    "QLoRA runs; no as litgpt on one card":
        "训练运行是否在反向传播中重算激活（任务的 activation_checkpointing 优先）：yes 同 torchtune 的配方（enable_activation_checkpointing: "
        "True）、Hugging Face 和 Unsloth 的 QLoRA 运行；no 同单卡 litgpt",
    "bytes a transformer layer keeps per token and hidden unit for the backward pass without activation "
    "checkpointing (bf16, eager PyTorch): litgpt's LoRA memory grows 45.5 (Llama-2-7B, micro-batch 1 to 2) and "
    "46.9 (Llama-2-7B, 1,024 tokens) a token, layer and hidden unit (litgpt resource tables, config hub)":
        "不用激活检查点时，一个 transformer 层为反向传播按每 token、每隐藏单元保留的字节数（bf16，PyTorch 即时模式）：litgpt 的 LoRA 显存每 token、"
        "每层、每隐藏单元增长 45.5（Llama-2-7B，微批 1 到 2）和 46.9（Llama-2-7B，1,024 token）（litgpt 资源表、config hub）",
    "bytes a QLoRA layer keeps per token and hidden unit without checkpointing on top of layer_activation_bytes: "
    "bitsandbytes before 0.43.3 (July 2024) kept every 4-bit matmul's bf16 input, which frozen weights need not "
    "(litgpt, same LoRA settings: Llama-2-7B 26, Mistral-7B 29 more than LoRA); 0 for bitsandbytes 0.43.3 or later "
    "and torchao NF4 (torchtune)":
        "不用激活检查点时，QLoRA 层在 layer_activation_bytes 之外按每 token、每隐藏单元多保留的字节数：0.43.3（2024年7月）之前的 "
        "bitsandbytes 会保留每个 4 位矩阵乘法的 bf16 输入，而冻结权重并不需要（litgpt，相同 LoRA 设置：Llama-2-7B 比 LoRA 多 26，"
        "Mistral-7B 多 29）；bitsandbytes 0.43.3 及以后、torchao NF4（torchtune）为 0",
    "training: yes (activations recomputed in the backward pass: a micro-batch keeps 2 bytes a layer and hidden unit), "
    "no (kept: layer_activation_bytes, e.g. litgpt on one card); blank: the activation_checkpointing setting (yes)":
        "训练：yes（在反向传播中重算激活：一个微批每层每隐藏单元保留 2 字节），no（保留激活：layer_activation_bytes，例如单卡 litgpt）；为空：使用 activation_checkpointing "
        "设置（yes）",
    "bytes a training micro-batch holds per token and vocabulary entry for its logits: the output head's bf16 logits, 2; the loss's fp32 copy is taken a chunk at a time by torchtune (CEWithChunkedOutputLoss) and litgpt, the frameworks of the published rows; 6 where the loss upcasts them whole (Hugging Face transformers' ForCausalLMLoss: logits.float())":
        '训练微批每 token、每词表项为 logits 保留的字节数：输出头的 bf16 logits 为 2；本仓库所收录数据的框架 torchtune（CEWithChunkedOutputLoss）与 litgpt 逐块把损失的 fp32 副本转出；整体上转时（Hugging Face transformers 的 ForCausalLMLoss：logits.float()）为 6',
    "vocabulary of a model whose row gives no vocab_size: the largest of the built-in catalog (Llama 4's 202,048), so that a model without the figure is not under-stated":
        '模型行未给出 vocab_size 时使用的词表大小：内置目录中最大的（Llama 4 的 202,048），使缺少该数字的模型不被低估',
    'tokens of the vocabulary (config.json vocab_size): the input embedding and output head, and the logits of a training micro-batch; blank: fallback_vocab_size':
        '词表的 token 数（config.json 的 vocab_size）：输入嵌入和输出头，以及训练微批的 logits；为空：使用 fallback_vocab_size',
    "vocabulary-sized matrices of a model: the input embedding and the output head, untied (config.json tie_word_embeddings false) in the catalog's Llama, Qwen (7B and up), Mistral and gpt-oss models; a tied pair (Falcon) is counted twice, 1.4 GB over Falcon-180B's 94 GB QLoRA base":
        '模型中与词表同大小的矩阵数：输入嵌入与输出头；目录中的 Llama、Qwen（7B 及以上）、Mistral 与 gpt-oss 模型不共享二者（config.json 的 tie_word_embeddings 为 false）；共享的一对（Falcon）按两份计，Falcon-180B 的 94 GB QLoRA 基座上多算 1.4 GB',
    "parameters of a transformer layer per hidden size squared: 4 attention + 8 MLP (arXiv:2001.08361 section 2.1)":
        "transformer 层的参数量与隐藏维度平方之比：注意力 4 + MLP 8（arXiv:2001.08361 第2.1节）",
    "layers x hidden of a fixed-shape model grows as its parameters to this power (hidden cubed as the parameters)":
        "形状固定的模型，其层数乘隐藏维度按参数量的这个幂增长（隐藏维度的立方与参数量成正比）",
    "hidden size per layer of an unknown model's shape (Llama 2 7B, 13B, Llama 3.1 8B: 4,096/32, 5,120/40, 4,096/32)":
        "架构未知的模型所取形状的每层隐藏维度（Llama 2 7B、13B、Llama 3.1 8B：4,096/32、5,120/40、4,096/32）",
    "training optimizer: adamw (blank), adamw_8bit (8-bit moments), cpu_offload (optimizer state and master weights "
    "in host memory: less card memory, a slower run)":
        "训练优化器：adamw（空白）、adamw_8bit（8位动量）、cpu_offload（优化器状态和主权重放在主机内存：省显存，运行更慢）",
    "target time to the first token of a request (prompt reading plus one decode step); blank: none":
        "请求首token的目标时间（读取提示加一个解码步）；空白：无",
    "target time per output token (one decode step); blank: none. Targets cap the batch, adding replicas":
        "每个输出token的目标时间（一个解码步）；空白：无。目标会限制批量，从而增加副本",
    "bytes of AdamW state per trained parameter on the card: fp32 master weights, momentum and variance, 4 + 4 + 4 "
    "(ZeRO, arXiv:1910.02054 section 3.1: 16 bytes a parameter with the bf16 weights and gradients)":
        "卡上每个训练参数的AdamW状态字节：fp32主权重、动量和方差，4 + 4 + 4（ZeRO，arXiv:1910.02054第3.1节：加上bf16权重和梯度共16字节）",
    "bytes of 8-bit AdamW state per trained parameter on the card: fp32 master weights plus 1-byte momentum and "
    "variance, 4 + 1 + 1 (8-bit optimizers, arXiv:2110.02861)":
        "卡上每个训练参数的8位AdamW状态字节：fp32主权重加1字节动量和方差，4 + 1 + 1（8位优化器，arXiv:2110.02861）",
    "run time of a full fine-tune whose optimizer state and master weights live in host memory (ZeRO-Offload) "
    "against one that keeps them on the card: the GPU waits over 60% of each step (DeepSpeed ZenFlow blog: "
    "Llama-2-7B on 4 A100, a CPU path over 4 s against a 2 s backward pass); LoRA pays it on the trained share":
        "优化器状态和主权重放在主机内存（ZeRO-Offload）的全量微调相对放在卡上的运行时间倍数：每步GPU等待超过60%"
        "（DeepSpeed ZenFlow博客：4张A100上的Llama-2-7B，CPU路径超过4秒，反向传播约2秒）；LoRA只按训练参数比例计",
    "tensor-parallel factor": "张量并行系数", "memory for KV cache": "KV缓存可用显存",
    "sequences memory holds": "显存可容纳序列数", "sequences batched": "批量序列数", "decode step, memory": "解码步（显存）",
    "decode step, compute": "解码步（计算）", "decode step": "解码步", "prompt reading per request": "每请求预填充",
    "requests/s per replica": "每副本请求/秒", "tokens/s one user sees": "单用户token/s",
    "deadline per run": "每次运行截止", "hours of one replica per run": "每次运行单副本小时",
    "wall-clock hours per run": "每次运行墙钟小时", "compute hours on one card": "单卡计算小时",
    "cards to meet the deadline": "按期完成所需卡数", "cards its memory needs": "显存所需卡数",
    "cards its deadline needs": "工期所需卡数", "its last Candidates row": "在Candidates表的最后一行",
    "row on GPUs": "在GPU表的行号",
    **{f"model: {key}": f"模型：{NAMES_ZH[key]}" for key in ("total_params_b", "active_params_b", "layers", "hidden",
                                                          "attn_heads", "kv_heads", "head_dim", "kv_latent", "vocab_size", "experts",
                                                          "experts_per_token")},
    "largest card count the engine proposes for one training run or one serving replica":
        "引擎为一次训练运行或一个推理副本提议的最大卡数",
    "B params": "十亿参数", "bytes": "字节", "FLOP/param/token": "FLOP/参数/token", "TFLOP/s": "TFLOP/s",
    "s": "秒", "requests/s": "请求/秒", "output tokens": "输出token",
    "load in card-days": "负载（卡日）", "replicas": "副本数", "cards held": "占用卡数",
    "GPU-hours per run": "每次运行GPU小时", "GPU-hours a month before spot reruns": "每月GPU小时（竞价重跑前）",
    "GPU-hours a month": "每月GPU小时", "cards on a monthly contract": "包月卡数", "cards billed": "计费卡数",
    **{f"cost if {t.name}": f"{t.zh}成本" for t in TIERS},
    "cost a month": "月成本", "cheapest suited tier": "最便宜的适用计费方式", "saving on cheapest tier": "最便宜计费方式可省",
    "tier advice": "计费建议", "first plan month #": "首个计划月序号", "last plan month #": "末个计划月序号",
    "active months": "活跃月数", "cost over the plan": "计划期成本",
    "share": "比例", "1 = yes": "1 = 是", "cards": "卡", "h": "小时", "GPU-h": "GPU小时", "tokens": "token",
    "card-days": "卡日", "currency/month": "currency/月", "tier": "计费方式", "months": "月", "currency": "currency",
    "billions of parameters": "十亿参数", "tokens per epoch": "每轮token", "epochs": "轮",
    "runs/month": "次/月", "requests/day": "请求/日", "requests/run": "请求/次", "h/day": "小时/日",
    "sequences": "序列", "currency/card-hour": "currency/卡时", "currency/card-month": "currency/卡月",
    "plan currency per CNY": "计划币种/CNY", "events": "次", "currency/kWh": "currency/千瓦时", "years": "年",
    "currency/year": "currency/年", "GB per B params": "GB/十亿参数", "days": "天",
    # offers: help texts of the GPUs columns that say whose prices a row holds
    "whose offer the prices are (built-in: a provider or platform as its source names it, or market = the median over "
    "providers); a row that names one replaces the built-in offer, its blank prices not offered":
        "价格来自哪家供应商的报价（内置：来源所写的供应商或平台名，或 market = 各供应商中位数）；填写供应商的行替换内置报价，其空白价格视为不提供",
    "the provider's region; any: not regional": "供应商的区域；any：不分区域",
    # calculation model v2: help texts of the new settings and columns
    "FP8/FP4 matmuls reach this share of the BF16 MFU": "FP8/FP4 矩阵运算达到 BF16 MFU 的此比例",
    "KV-cache precision of serving engines: fp16 (2 bytes) or fp8 (1 byte)": "推理引擎的 KV 缓存精度：fp16（2 字节）或 fp8（1 字节）",
    "LoRA FLOPs per active parameter per token (frozen base: no weight gradients)":
        "LoRA 每激活参数每 token 的 FLOPs（基座冻结：无权重梯度）",
    "LoRA/QLoRA memory for CUDA workspace, optimizer buffers and fragmentation": "LoRA/QLoRA 的 CUDA 工作空间、优化器缓冲和碎片显存",
    "QLoRA FLOPs per active parameter per token: LoRA's 4 plus the 4-bit base's dequantisation, measured 22% slower "
    "than LoRA on the same card": "QLoRA每激活参数每token的浮点运算：LoRA的4再加4位基座的反量化，同卡实测比LoRA慢22%",
    "a catalog model (`budgetgen models`, or a Models sheet row): fills the size and architecture":
        "目录中的模型（`budgetgen models`，或 Models 工作表中的一行）：填入参数量和结构",
    "dense FP4 tensor peak; blank: the card has no FP4 unit": "稠密 FP4 张量峰值；为空：该卡没有 FP4 单元",
    "dense FP8 tensor peak with FP32 accumulate; blank: the card has no FP8 unit":
        "FP32 累加的稠密 FP8 张量峰值；为空：该卡没有 FP8 单元",
    "extra memory per replica on top of the estimated KV cache": "每个副本在估算的 KV 缓存之外额外需要的显存",
    "fixed time of one decode step (scheduling, kernel launches)": "每个解码步的固定时间（调度、内核启动）",
    "fp16 KV-cache bytes per token per square root of billions of active parameters, for a model whose architecture "
    "is unknown": "结构未知的模型：每 token 的 fp16 KV 缓存字节数 / 激活参数量（十亿）的平方根",
    "input (prompt) tokens per request; blank: the default_prompt_tokens setting":
        "每个请求的输入（提示）token 数；为空：使用 default_prompt_tokens 设置",
    "input tokens per request when a serving task gives no prompt_tokens": "推理任务未填 prompt_tokens 时每个请求的输入 token 数",
    "measured output tokens/s of one replica under load; blank: estimated per replica":
        "单个副本在负载下实测的输出 token/s；为空：按副本估算",
    "model FLOPs utilisation of mixture-of-experts training (active < total parameters)":
        "混合专家模型训练的算力利用率（激活参数少于总参数）",
    "output (generated) tokens per request (serving)": "每个请求的输出（生成）token 数（推理）",
    "parameters active per token (mixture of experts); blank: the catalog model's, else all of them":
        "每个 token 激活的参数量（混合专家）；为空：取目录模型的值，否则为全部参数",
    "replicas an inference service keeps at least (failover)": "推理服务至少保留的副本数（故障切换）",
    "replicas an online service keeps at least (failover); blank: the min_replicas setting":
        "在线服务至少保留的副本数（故障切换）；为空：使用 min_replicas 设置",
    "sequences a replica must hold at least (fewer when concurrency is lower); sizes the cards per replica":
        "每个副本至少要容纳的序列数（并发数更低时取并发数）；决定每副本卡数",
    "sequences a serving engine batches per card when concurrency is blank": "并发数为空时推理引擎每张卡批处理的序列数",
    "sequences one replica decodes together; blank: as many as memory holds (at most max_batch_per_card per card)":
        "单个副本同时解码的序列数；为空：显存能容纳的数量（每卡最多 max_batch_per_card）",
    "serving runtime memory on top of the weights (activations, CUDA graphs); the KV cache is sized apart":
        "权重之外的推理运行时显存（激活、CUDA 图）；KV 缓存另行计算",
    "share of memory bandwidth reached by decode reads": "解码读取达到的显存带宽比例",
    "share of the card's peak reached by decode matmuls": "解码矩阵运算达到的显卡峰值比例",
    "share of the card's peak reached while reading prompts": "读取提示（预填充）时达到的显卡峰值比例",
    "speed factor per doubling of the cards in one serving replica on PCIe cards (tp_efficiency_nvlink: "
    "NVLink-class)": "PCIe卡上单个推理副本的卡数每翻一倍的速度系数（NVLink类见tp_efficiency_nvlink）",
    "speed factor per doubling of the cards in one serving replica on NVLink-class cards (tp_efficiency: PCIe)":
        "NVLink类卡上单个推理副本的卡数每翻一倍的速度系数（PCIe见tp_efficiency）",
    "FP8/FP4 training reaches the MFU this share of the FP8/FP4 peak: 0.93 x mfu 0.40 x scaling 0.95 = 0.35 of "
    "the FP8 peak, the median of Megatron-Bridge's dense FP8 runs on H100 and B200 (Llama 3 8B, 70B, 405B: "
    "0.33-0.36)":
        "FP8/FP4训练按FP8/FP4峰值的这一比例达到MFU：0.93 × mfu 0.40 × 扩展效率 0.95 = FP8峰值的0.35，"
        "即 Megatron-Bridge 在 H100 和 B200 上稠密 FP8 运行的中位数（Llama 3 8B、70B、405B：0.33-0.36）",
    "share of the weights' bandwidth share that decode reads of the KV cache (batch x context bytes) reach; 1: as "
    "the weights (TensorRT-LLM's long-context runs, 20,000 in / 2,000 out, need no less); calibrate fits it to "
    "measured long-context runs":
        "解码读取 KV 缓存（批量 × 上下文字节）达到的权重带宽比例的份额；1：与权重相同（TensorRT-LLM 的长上下文运行，"
        "输入 20,000 / 输出 2,000，不需要更低）；calibrate 按实测长上下文运行拟合",
    "parameters each card of a serving replica holds from which the replica loses only the interconnect's "
    "tensor-parallel efficiency per doubling (Llama 3.1 405B on 8 cards: 50.7, in band); a card holding less "
    "loses more":
        "推理副本每张卡承载的参数量达到该值时，每翻一倍卡数只损失互联的张量并行效率（Llama 3.1 405B 用 8 张卡："
        "50.7，在区间内）；每张卡承载更少时损失更多",
    "how fast the tensor-parallel loss grows as each card holds less of the model: the doublings count "
    "(tp_reference_params_b x cards / parameters)^this times, at least once (least squares over the published "
    "serving runs, among them TensorRT-LLM 0.19's Llama 3.3 70B FP4 on 1 to 8 B200 and v0.6.1's Falcon-180B FP8 "
    "on 4 and 8 H100 at batch 1,024)":
        "每张卡承载的模型越少，张量并行损失增长越快：翻倍次数按 (tp_reference_params_b × 卡数 / 参数量)^该值 计，"
        "至少一次（对已发布推理运行的最小二乘，其中包括 TensorRT-LLM 0.19 的 Llama 3.3 70B FP4 在 1 至 8 张 B200 上，"
        "以及 v0.6.1 的 Falcon-180B FP8 在 4 和 8 张 H100 上、批量 1,024）",
    "FP4 training on a card's FP4 unit reaches the MFU this share of the FP4 peak (train_fp8_efficiency on the "
    "FP8 peak): NVFP4 recipes keep attention and some layers in higher precision; NVIDIA's MaxText NVFP4 runs on "
    "GB200 (FP4 peak twice FP8) were 1.35x (Llama 3 8B) and 1.43x (Llama 3.1 405B) as fast as FP8, "
    "0.93 x 1.39 / 2 = 0.65":
        "在卡的FP4单元上训练时，按FP4峰值的这一比例达到MFU（FP8峰值见train_fp8_efficiency）：NVFP4方案将注意力和部分层"
        "保持在更高精度；NVIDIA 在 GB200（FP4峰值为FP8的两倍）上的 MaxText NVFP4 运行比 FP8 快 1.35 倍（Llama 3 8B）"
        "和 1.43 倍（Llama 3.1 405B），0.93 × 1.39 / 2 = 0.65",
    "cards of one training run up to which each card keeps its speed (Falcon-180B on 4,096 A100 reached 0.48 MFU; "
    "Megatron-LM 52% on 3,072 A100)":
        "单次训练运行中每张卡保持其速度的最大卡数（Falcon-180B 在 4,096 张 A100 上达到 0.48 MFU；Megatron-LM 在 3,072 张 A100 上达到 52%）",
    "share of its per-card speed a training run keeps per doubling of its cards beyond scale_free_cards (Llama 3 "
    "405B: 430 TFLOP/s a card on 8,192 H100, 400 on 16,384; arXiv:2407.21783 table 4)":
        "训练运行超过 scale_free_cards 后卡数每翻一倍所保留的单卡速度比例（Llama 3 405B：8,192 张 H100 上每卡 430 TFLOP/s，"
        "16,384 张上 400；arXiv:2407.21783 表 4）",
    "bandwidth one card sends at over NVLink-class links (H100/H200 NVLink 4: 900 GB/s both ways together)":
        "单卡经NVLink类互联的发送带宽（H100/H200 NVLink 4：双向合计900 GB/s）",
    "bandwidth one card sends at over PCIe between cards (PCIe 4.0 x16: 32 GB/s a direction; NCCL all-reduce "
    "bus bandwidth 28 GB/s on 8 PCIe cards, about the same on 8 RTX 4090: NVIDIA/nccl issue 1639)":
        "单卡经PCIe在卡间的发送带宽（PCIe 4.0 x16：单向32 GB/s；NCCL全归约总线带宽在8张PCIe卡上为28 GB/s，"
        "8张RTX 4090上大致相同：NVIDIA/nccl issue 1639）",
    "model FLOPs utilisation of LoRA/QLoRA fine-tunes (frozen base: small optimizer step, no weight gradients)":
        "LoRA/QLoRA微调的算力利用率（基座冻结：优化器步骤小，无权重梯度）",
    "multiplies every MFU on this card: below 1 where its kernels reach less of the datasheet peak than H100/A100 "
    "kernels reach of theirs; blank: 1": "乘到此卡的每个MFU上：其算子达到的标称峰值比例低于H100/A100时小于1；空白为1",
    "multiplies every training MFU on this card in place of matmul_efficiency (calibrate fits matmul_efficiency to "
    "serving runs and keeps training here as it was); blank: matmul_efficiency":
        "代替 matmul_efficiency 乘到此卡的每个训练MFU上（calibrate 用推理运行拟合 matmul_efficiency，并在此保留训练原值）；空白为 matmul_efficiency",
    "per-card network bandwidth of the expert all-to-all in mixture-of-experts training (400 Gb/s InfiniBand)":
        "MoE训练中专家全交换的每卡网络带宽（400 Gb/s InfiniBand）",
    "router and expert-kernel time per layer of a mixture-of-experts decode step": "MoE解码步每层的路由与专家算子时间",
    "share of the expert all-to-all time of MoE training not hidden behind compute": "MoE训练中未被计算掩盖的专家全交换时间比例",
    "share of the memory bandwidth decode reads reach on this card; blank: the decode_efficiency setting":
        "此卡解码读取达到的显存带宽比例；空白用decode_efficiency设置",
    "time of one all-reduce of a decode step across a PCIe replica, twice per layer (NCCL all_reduce_perf on 8 "
    "RTX 4090 over PCIe: 40-43 µs for the smallest message, NVIDIA/nccl issue 1530; rounded up for the launch)":
        "PCIe副本中解码步一次全归约的时间，每层两次（NCCL all_reduce_perf 在8张经PCIe连接的RTX 4090上，最小消息为"
        "40-43微秒，NVIDIA/nccl issue 1530；为启动开销向上取整）",
    "time of one all-reduce of a decode step across an NVLink-class replica, twice per layer":
        "NVLink类副本中解码步一次全归约的时间，每层两次",
    "training matmul precision: bf16 (blank), fp8, fp4 (the card's FP8/FP4 peak where it has one)":
        "训练矩阵运算精度：bf16（空白）、fp8、fp4（卡有FP8/FP4单元时用其峰值）",
    "sxm (or OAM) module or pcie card": "sxm（或 OAM）模组或 pcie 板卡",
    "tokens of one training micro-batch on a card, whose activations every card holds (2 bytes a layer and hidden "
    "unit with checkpointing, layer_activation_bytes without)":
        "每张卡上一个训练微批的 token 数，每张卡都保存其激活（使用检查点时每层每隐藏单元 2 字节，不使用时为 layer_activation_bytes）",
    "tokens one sequence holds in the KV cache; blank: prompt plus output": "单个序列在 KV 缓存中保存的 token 数；为空：输入加输出",
    "total parameters, e.g. 7 or 7B; required when model is blank, overrides the catalog's when typed":
        "总参数量，例如 7 或 7B；model 为空时必填，填写时覆盖目录中的值",
    "training: full (default), lora, qlora; serving: fp16 (default, = bf16), fp8, int8, int4, fp4":
        "训练：full（默认）、lora、qlora；推理：fp16（默认，= bf16）、fp8、int8、int4、fp4",
    "wall-clock days one training or batch run may take; blank: its share of the month":
        "一次训练或批量运行允许的墙钟天数；为空：按每月运行次数分摊的天数",
    "bytes of one cached KV element = 1 when kv_cache_dtype is fp8, else 2": "每个缓存 KV 元素的字节数 = kv_cache_dtype 为 fp8 时 1，否则 2",
    # sheet headers and labels
    "gpu (chosen)": "GPU型号 (已选)", "excluded because": "排除原因", "cards given": "指定卡数", "chosen": "已选",
    "meaning": "含义", "unit": "单位", "name": "名称", "constant": "常量", "cap a month": "每月上限",
    "plan month": "计划月", "#": "序号", "month #": "月序号", "task row #": "任务行号", "month": "月份", "start #": "开始序号", "end #": "结束序号",
    "cost": "成本", "cap": "上限", "over cap?": "超上限？",
    "purchase": "购买价", "power (W)": "功耗（W）", "on demand": "按需", "fixed": "固定成本", "energy": "电费",
    "break-even (h/day)": "盈亏平衡（小时/日）", "plan use (h/day/card)": "计划使用（小时/日/卡）", "verdict": "结论",
    "/card": "/卡", "/day": "/日", "/h": "/小时",
    "enter purchase_price on GPUs to compare": "在GPUs表填写购买价格（purchase_price）以比较",
    "verdict without a purchase price:": "没有购买价格时的结论：",
    "enter on_demand_per_hour on GPUs to compare": "在GPUs表填写按需价格（on_demand_per_hour）以比较",
    "verdict without an on-demand price:": "没有按需价格时的结论：",
    "enter power_w on GPUs to compare": "在GPUs表填写功耗（power_w）以比较",
    "verdict without a power figure:": "没有功耗数据时的结论：",
    "Buy when each owned card would be used more hours a day than the break-even; owning pays only for steady, "
    "long daily use.": "每张自有卡每天使用小时数超过盈亏平衡点时才值得购买；只有稳定、长时间的日常使用才适合自购。",
    "GPU budget": "GPU预算", "to": "至", "Period total": "计划期合计", "GPU": "GPU", "extras": "额外费用",
    "hidden-cost buffer": "隐性成本缓冲", "total": "合计", "Total": "合计", "by tier": "按计费方式", "period": "计划期",
    "Monthly GPU cost by tier": "按计费方式的月度GPU成本", "Plan vs billed": "计划与账单", "by kind": "按类型", "by cost center": "按成本中心",
    "by kind, GPU only": "按类型（仅GPU）", "by cost center, GPU only": "按成本中心（仅GPU）",
    "period cost": "计划期成本", "Warnings": "警告", "none": "无",
    "check": "检查", "computed": "计算值", "expected": "预期值", "ties out?": "是否一致？", "ALL CHECKS": "全部检查",
    "task x month matrix = Summary GPU total": "任务×月矩阵 = 汇总GPU合计",
    "tasks' period cost = Summary GPU total": "任务计划期成本 = 汇总GPU合计",
    "by tier = Summary GPU total": "按计费方式 = 汇总GPU合计", "Tiers sheet cost = Summary GPU total":
    "Tiers表成本 = 汇总GPU合计", "by kind = Summary GPU total": "按类型 = 汇总GPU合计",
    "by cost center = Summary GPU total": "按成本中心 = 汇总GPU合计",
    "extras matrix = Summary extras total": "额外费用矩阵 = 汇总额外费用合计",
    "GPU + extras + buffer = period total": "GPU + 额外费用 + 缓冲 = 计划期合计",
    "buffer = rate x GPU total": "缓冲 = 比率 × GPU合计",
    "About this workbook": "关于本工作簿", "made by": "生成工具", "input file": "输入文件", "input SHA-256": "输入SHA-256",
    "build date": "编制日期", "setting": "设置项", "how to read": "阅读说明",
    "Summary: the period total, each month (GPU + extras + hidden-cost buffer), by tier, kind and cost center.":
    "Summary：计划期合计、每月（GPU + 额外费用 + 隐性成本缓冲），以及按计费方式、类型和成本中心的汇总。",
    "Blue cells on light yellow are inputs: prices (GPUs), assumptions (Assumptions), the chosen GPU and the task "
    "inputs (Tasks). Change them and every formula recalculates; the sheets are protected without a password so "
    "that only input cells take typing.":
    "浅黄底蓝字的单元格是输入：价格（GPUs）、假设（Assumptions）、所选GPU和任务输入（Tasks）。修改后所有公式会重新计算；"
    "工作表受保护（无密码），只有输入单元格可以编辑。",
    "Black cells are formulas, green cells are links to another sheet; every formula carries the value budgetgen "
    "computed, so the file reads correctly in any viewer.":
    "黑字单元格是公式，绿字单元格是对其他工作表的引用；每个公式都带有budgetgen计算的值，任何查看器都能正确显示。",
    "Checks must read TRUE in its first row: every total ties out to its parts.":
    "Checks表第一行必须为TRUE：每个合计都与其组成部分一致。",
    "Candidates shows every GPU for every task (in a large inventory the chosen one and the cheapest: "
    "candidates_per_task) with its cost and the provider behind its price; Tiers the money per price tier against "
    "the caps; BuyVsRent whether owning a card pays; Recon tabs compare the plan with the cloud bill and GPU usage.":
    "Candidates列出每个任务在每种GPU上（大型清单中为所选的卡和最便宜的几种：candidates_per_task）的成本及其价格所属的供应商；Tiers列出各计费方式的金额与上限；BuyVsRent判断自购是否划算；"
    "Recon表将计划与云账单和GPU用量对比。",
    "Reconciliation": "对账", "plan versus bill versus usage": "计划、账单与用量对比", "planned": "计划",
    "billed": "账单", "variance": "偏差", "variance %": "偏差%", "status": "状态",
    "Plan versus bill by task": "按任务的计划与账单对比", "resource": "资源", "services": "服务", "lines": "行数",
    "hours": "小时", "avg util %": "平均利用率%", "peak memory share": "峰值显存占比", "OOM events": "OOM次数",
    "flags": "标记", "flag": "标记", "action next month": "下月措施", "saving if acted on": "采取措施可节省",
    "non-GPU lines": "非GPU费用行", "non-GPU billed": "非GPU账单", "hidden-cost buffer reserved": "预留隐性成本缓冲",
    "buffer left": "剩余缓冲", "GPU billed to tasks": "计入任务的GPU账单", "unallocated GPU": "未分配GPU",
    "billed total": "账单合计", "planned GPU total": "计划GPU合计",
    "commitments planned (Commitments)": "计划承诺调整（见承诺表）", "GPU and commitments": "GPU与承诺", "BilledCost in the input": "输入中的BilledCost",
    "buffer share": "缓冲份额", "planned GPU hours": "计划GPU小时", "GPU hours billed": "账单GPU小时",
    "rate variance": "价格差异", "usage variance": "用量差异", "idle cards": "闲置卡数",
    "to attribute or stop": "待归属或停止", "GPU resources": "GPU资源数", "planned (Extras)": "计划（额外费用）",
    "not planned": "未计划", "non-GPU not planned": "未计划的非GPU账单", "credits": "抵扣额",
    "refunds and adjustments": "退款与调整", "saving from idle cards": "闲置卡可节省",
    "achievable saving": "可实现的节省", "achievable saving, bill of": "可实现的节省，账单月份",
    "credits and refunds": "抵扣与退款",
    "bill coverage": "账单覆盖", "first charge day": "首个计费日", "last charge day": "最后计费日",
    "days with lines": "有费用行的天数", "partial month": "不完整月份", "duplicate lines counted once": "仅计一次的重复行",
    "their BilledCost": "其BilledCost", "not known": "未知", "not reported": "未报告", "like for like": "同口径对比",
    "non-GPU (extras + buffer)": "非GPU（额外费用 + 缓冲）", "re-forecast": "重新预测", "estimate": "预测",
    "estimate at completion": "完工预测", "budget": "预算", "variance at completion": "完工偏差",
    "EffectiveCost": "EffectiveCost（摊销成本）", "compared with plan": "与计划比较的成本",
    "planned PricingCategory": "计划的PricingCategory", "PricingCategory": "PricingCategory（计价类别）",
    "commitment lines": "承诺费用行", "commitment id": "承诺编号", "commitment type": "承诺类型",
    "unused commitment": "未使用的承诺", "commitment purchase": "承诺购买", "commitment lines billed": "承诺费用行账单",
    "daily GPU bill, task id": "每日GPU账单：任务ID", "day": "日期", "median of previous days": "此前各日中位数",
    "spike": "突增",
    "EffectiveCost of the month": "本月EffectiveCost", "not in every line of the bill": "账单并非每行都有",
    "FOCUS PricingCategory": "FOCUS计价类别",
    # recon actions (recon.rules.ACTIONS)
    "drop the idle cards or replicas next month, or move to a smaller card": "下月减少闲置的卡或副本，或改用更小的卡",
    "the task is billed over its plan: check its usage with the task owner and re-forecast its remaining months":
    "该任务账单超出计划：与任务负责人核对用量，并重新预测其剩余月份",
    "tag it or stop it": "为其打标签或停止它",
    "billed at another price than its tier plans (e.g. on demand instead of the commitment): check the commitment "
    "covers it, or re-plan the task's tier": "按计划档位以外的价格计费（例如按需而非承诺）：检查承诺是否覆盖它，或重新规划该任务的档位",
    "optimise memory use (batch size, FlashAttention, padding) before adding VRAM":
    "先优化显存使用（批大小、FlashAttention、填充），再考虑增加显存",
    "GPU waits on data or serial decoding: check the data pipeline and serving framework":
    "GPU在等待数据或串行解码：检查数据管道和推理服务框架",
    # help texts of the input columns and settings (schema), constants, Assumptions notes, template examples
    "GPU name, the key tasks refer to": "GPU名称，任务按此引用",
    "consumer cards are warned against for long continuous training": "消费级显卡用于长时间连续训练时会给出警告",
    "memory per card (required for a GPU not in the built-in catalog)": "每卡显存（不在内置目录中的GPU必填）",
    "memory bandwidth": "显存带宽",
    "dense BF16/FP16 tensor peak with FP32 accumulate (never the sparse figure)":
    "稠密BF16/FP16张量峰值（FP32累加，不用稀疏值）",
    "link between cards": "卡间互联",
    "efficiency of each added card: speedup(n) = 1 + (n-1) x scaling": "每增加一张卡的效率：加速比(n) = 1 + (n-1) × 扩展效率",
    **{t.meaning: t.meaning_zh for t in TIERS},
    "all-in price of an owned machine per card; blank: not for sale": "自购机器每卡的全包价格；空白：不出售",
    "wall power of an owned machine per card under load": "自购机器每卡满载时的整机功耗",
    "where the prices came from": "价格来源",
    "the date the source states for the prices (YYYY-MM-DD, or YYYY-MM); \"retrieved YYYY-MM-DD\" when it states none: "
    "the day it was read": "来源所注明的价格日期（YYYY-MM-DD 或 YYYY-MM）；来源未注明日期时写 \"retrieved YYYY-MM-DD\"：读取之日",
    "unique key": "唯一编号", "description": "描述",
    "finetune, pretrain, inference (online serving) or batch (offline batch inference)":
    "微调、预训练、推理（在线服务）或批量（离线批量推理）",
    "required for training, e.g. 5M": "训练任务必填，例如 5M",
    "passes over the training tokens": "训练数据的遍历轮数",
    "training or batch runs per active month; 0.5: one run spread over two months":
    "每个活跃月的训练或批量运行次数；0.5：一次运行跨两个月",
    "required for inference": "推理任务必填", "required for batch": "批量任务必填",
    "hours a day the service is up and the traffic falls in": "服务每天运行且承接流量的小时数",
    "a catalog GPU name; blank: the engine chooses": "目录中的GPU名称；空白：由引擎选择",
    "cards per run/replica; blank: the fewest that fit": "每次运行/每副本的卡数；空白：能放下的最少卡数",
    "price tier; default: inference monthly, batch idle, training on_demand":
    "计费方式；默认：推理包月、批量闲置、训练按需",
    "overrides the mfu setting for this task": "覆盖此任务的算力利用率设置",
    "first active month; blank: plan start": "首个活跃月；空白：计划开始", "last active month; blank: plan end":
    "最后活跃月；空白：计划结束", "for grouping in the summary": "用于汇总分组",
    "what the cost is": "费用内容", "kind of non-GPU cost": "非GPU费用的类别", "cost per active month": "每个活跃月的费用",
    "first month; blank: plan start": "首月；空白：计划开始", "last month; blank: plan end": "末月；空白：计划结束",
    "setting name, e.g. period_start (docs/input-reference.md lists every setting)":
        "设置项名称，例如 period_start（docs/input-reference.md 列出全部设置项）",
    "its value; blank: the default": "取值；空白：默认值",
    "what the setting means (init writes it; the reader ignores it)": "该设置项的含义（由 init 写入；读取时忽略）",
    # the Scenarios sheet (the driver's help joins the drivers' records)
    SCENARIO_COLUMNS[0].help: "；".join(f"{d.name}：{d.meaning_zh}" for d in DRIVERS),
    "the task it moves; blank: every task (a task's own row wins)": "该行影响的任务；空白：所有任务（任务自己的行优先）",
    "the low scenario's value; blank: base": "低情景的值；空白：取基准值",
    "the base scenario's value; blank: 1 (buffer: the hidden_cost_buffer setting)":
        "基准情景的值；空白：1（buffer：取 hidden_cost_buffer 设置）",
    "the high scenario's value; blank: base": "高情景的值；空白：取基准值",
    "where the range comes from": "取值范围的来源",
    # the Models sheet
    "model name, the key tasks refer to (case-insensitive)": "模型名称，任务按此引用（不区分大小写）",
    "all parameters, held in memory (required for a model not in the built-in catalog)":
        "全部参数，均占用显存（不在内置目录中的模型必填）",
    "parameters active per token (mixture of experts); blank: all of them": "每个token激活的参数（混合专家）；空白：全部参数",
    "transformer layers": "Transformer层数", "hidden size": "隐藏层维度", "query attention heads": "查询注意力头数",
    "key/value heads (grouped-query attention); blank for MLA": "键/值头数（分组查询注意力）；MLA模型留空",
    "elements per attention head; blank for MLA": "每个注意力头的维度；MLA模型留空",
    "MLA models: elements cached per layer per token (e.g. 576); blank otherwise":
        "MLA模型：每层每token缓存的元素数（例如 576）；其他模型留空",
    "context length the model was trained for": "模型训练时的上下文长度",
    "mixture of experts: routed experts per MoE layer (shared experts not counted); blank for a dense model":
        "混合专家：每个MoE层的路由专家数（不含共享专家）；稠密模型留空",
    "mixture of experts: routed experts each token uses (top-k), fewer than experts":
        "混合专家：每个token使用的路由专家数（top-k），少于 experts",
    "where the figures came from": "数据来源", "elements": "元素", "heads": "头",
    "Object storage": "对象存储",
    "ISO code of the plan's currency, shown in number formats": "计划币种的ISO代码，用于数字格式",
    "plan currency per 1 CNY: overrides the reference rate for CNY prices (an FX sheet row does so for any currency)":
        "每 1 人民币折合的计划币种金额：覆盖人民币价格的参考汇率（汇率表中的一行可为任何币种覆盖）",
    "the date the plan is built as (YYYY-MM-DD), for the default period and the file's properties; blank: "
    "`--date`, else today": "计划编制日期（YYYY-MM-DD），决定默认计划期和文件属性；空白：`--date`，否则今天",
    "first plan month (YYYY-MM); default: the month after the build date": "首个计划月（YYYY-MM）；默认：编制日期的下个月",
    "months in the plan": "计划包含的月数", "billing hours in a month": "每月计费小时数",
    "model FLOPs utilisation: achieved share of the GPU's dense peak": "模型算力利用率：实际达到的GPU稠密峰值比例",
    "training FLOPs per parameter per token (2 forward + 4 backward)": "每参数每token的训练浮点运算（前向2 + 反向4）",
    "extra wall time of a run for data loading, checkpoints, restarts": "数据加载、检查点、重启带来的额外运行时间",
    "extra GPU time on debugging and trial runs, as a share of a run": "调试和试运行的额外GPU时间，占一次运行的比例",
    "hours a card is billed per run before work starts (image, downloads, tokenisation)":
    "每次运行开始工作前每卡计费的小时数（镜像、下载、分词）",
    "share of a card's memory a job can use (CUDA context, fragmentation)": "作业可用的显存比例（CUDA上下文、碎片）",
    "training activation memory allowance per billion parameters": "每十亿参数的训练激活显存预留",
    "share of parameters trained by LoRA/QLoRA": "LoRA/QLoRA训练的参数比例",
    "multiplies inference demand for peaks": "推理需求的峰值放大系数",
    "extra GPU-hours on spot for interruptions and reruns": "竞价实例因中断和重跑增加的GPU小时",
    "reserve for storage, egress, images, platform fees, unrefundable balance (guidance 0.20-0.30)":
    "为存储、出网流量、镜像、平台费、不可退余额预留的比例（建议0.20-0.30）",
    "how the engine picks a GPU when a task names none": "任务未指定GPU时引擎的选择方式",
    "monthly average utilisation under which a resource is flagged for downsizing": "月平均利用率低于此值的资源被标记为需缩减",
    "OOM events a month from which a resource is flagged": "每月OOM次数达到此值的资源被标记",
    "bill over plan by more than this share is flagged": "账单超出计划超过此比例时被标记",
    "regular expression that marks a bill line as GPU (blank: the built-in pattern of GPU instance families)":
    "标记GPU账单行的正则表达式（空白：内置的GPU实例族模式）",
    ("time zone the bills' months are counted in (IANA name, e.g. America/New_York); timestamps with an offset "
     "are converted to it, those without are read in it"):
    "计算账单月份所用的时区（IANA 名称，例如 Asia/Shanghai）；带偏移的时间戳换算到该时区，不带的按该时区读取",
    ("memory the bill engine (DuckDB) may use before spilling to disk, e.g. 1GB or 512MB; blank: 1GB, or a quarter "
     "of the machine's memory or half a ulimit -v or cgroup limit where less"):
    "账单引擎（DuckDB）溢写到磁盘之前可用的内存，例如 1GB 或 512MB；空白：1GB；若本机内存的四分之一、ulimit -v 或 cgroup "
    "限制的一半更小，则取其较小者",
    "resources a Recon tab lists, flagged ones first by the money at stake; the others are summed in one line "
    "and listed on the month's Resources sheet":
    "对账表列出的资源数，有标记的按涉及金额优先；其余资源合计为一行，并完整列在当月的Resources表中",
    "a GPU task's day billed above this multiple of the median of its previous 7 billed days (SPIKE_DAYS) is "
    "flagged as a spike on the Recon tab's daily table":
    "GPU任务某日账单超过其此前7个计费日（SPIKE_DAYS）中位数的此倍数时，在对账表的每日表中标记为突增",
    ("options of each task the Candidates sheet lists: the chosen card and this many of the cheapest cards that "
     "could be chosen (the JSON lists every card); blank: every catalog card for an inventory of up to 1,000 tasks, "
     "else 3"):
    "Candidates表为每个任务列出的选项：所选的卡及可选卡中最便宜的这么多张（JSON列出全部卡）；空白：清单不超过1,000个任务时"
    "列出目录中的每种卡，否则3张",
    "usage and variance": "用量与差异", "tasks' GPU variance": "各任务GPU差异合计", "of it, rate variance": "其中：价格差异",
    "of it, usage variance": "其中：用量差异", "not split (no GPU hours on the bill)": "未拆分（账单未给出GPU小时）",
    "tasks over plan": "超出计划的任务", "resources flagged": "有标记的资源", "saving if the actions are taken": "采取措施后可节省",
    "actions next month": "下月措施", "resources": "资源数", "their bill": "其账单金额",
    "billed in another currency": "以其他币种计费", "billed in its currency": "以该币种计费",
    "The detail below (by task, by resource, non-GPU lines and totals, commitment lines, daily bill) prints only when "
    "asked: select its rows and print the selection.":
        "下方明细（按任务、按资源、非GPU费用与合计、承诺费用、每日账单）默认不打印：需要时选中这些行并打印所选内容。",
    "more resources are listed on": "个其他资源列在", "more resources are listed in": "个其他资源列在",
    "(the actions above do not count them)": "（上方措施未计入这些资源）", "rate of": "汇率日期",
    "more resources, listed on": "个其他资源，完整列在", " and {n} more": "等另外{n}个", "flagged": "个有标记",
    "more resources of tasks, listed in": "个其他任务资源，完整列在", "more untagged resources, listed in": "个其他未标记资源，完整列在",
    "Resources": "资源明细", "task # on the Recon tab": "对账表中的任务序号", "resources of the month not on its Recon tab": "未列在对账表中的本月资源",
    "electricity price for owned machines (default 1.0 CNY, at the reference rate in another plan currency)":
        "自购机器的电价（默认 1.0 人民币，其他计划币种按参考汇率折算）", "write-off period of an owned machine": "自购机器的折旧年限",
    "cooling, disks, repairs per owned machine (default 2,000 CNY, at the reference rate in another plan currency)":
        "每台自购机器的散热、磁盘、维修费用（默认 2,000 人民币，其他计划币种按参考汇率折算）",
    "ISO code of this row's prices (e.g. USD, CNY); blank: the plan currency. Prices in another currency are "
    "converted at the FX rate on Assumptions": "该行价格的 ISO 币种代码（例如 USD、CNY）；空白：计划币种。其他币种的价格按假设表上的汇率折算",
    "ISO code of a currency the GPUs sheet, the catalog or a bill prices in": "GPU表、内置目录或账单标价所用币种的 ISO 代码",
    "plan currency per 1 unit of it; blank sheet: the bundled ECB reference rate":
        "每 1 单位该币种折合的计划币种金额；无此表：使用内置的欧洲央行参考汇率",
    "the day the rate holds for (YYYY-MM-DD)": "汇率适用的日期（YYYY-MM-DD）",
    "where the rate came from": "汇率来源",
    "plan currency per unit": "计划币种/单位", "FX rate": "汇率", "TRUE": "是", "FALSE": "否", "FX currency": "汇率币种", "rate": "汇率值",
    "as of, source": "日期、来源", "{column} in the plan currency": "{column}（计划币种）",
    "per card-hour, in the row's currency": "每卡时，按该行币种", "per card-month, in the row's currency": "每卡月，按该行币种",
    "in the row's currency": "按该行币种", "plan currency": "计划币种",
    **{t.cap_help: f"{t.zh}计费的可选月度预算上限" for t in TIERS},
    " (structure: change it in the input workbook and rebuild)": "（结构性设置：在输入工作簿中修改并重新生成）",
    "billing days in a month = hours_per_month / 24": "每月计费天数 = 每月小时数 / 24",
    "optional budget cap for the {tier} tier (blank: none)": "{tier}的可选预算上限（空白：无）",
    "relative tolerance of Checks": "Checks的相对容差",
    "bytes per parameter of fp16/bf16 weights": "fp16/bf16权重每参数字节数",
    "bytes per parameter of int8 weights": "int8权重每参数字节数",
    "bytes per parameter of int4 (QLoRA 4-bit) weights": "int4（QLoRA 4位）权重每参数字节数",
    "bytes per trained parameter of bf16 weights and gradients (the optimizer state apart)":
        "每个训练参数的bf16权重与梯度字节数（不含优化器状态）",
    "FLOPs per parameter per generated token": "每生成一个token每参数的浮点运算",
    "parameters per billion": "每十亿的参数数", "FLOP/s per TFLOP/s": "每TFLOP/s的FLOP/s",
    "seconds in an hour": "每小时秒数", "seconds in a day": "每天秒数", "hours in a day": "每天小时数",
    "days in a year": "每年天数", "watts per kilowatt": "每千瓦瓦数", "utilisation percent per share": "利用率百分数/比例",
    "memory share above which a barely busy GPU is flagged data-starved": "显存占比高于此值且几乎空闲的GPU被标记为数据饥饿",
    "utilisation under which a full-memory GPU is flagged data-starved": "显存已满而利用率低于此值的GPU被标记为数据饥饿",
    "Support-bot QLoRA fine-tune": "客服机器人QLoRA微调", "Domain pretraining": "领域预训练",
    "Knowledge-base chat service": "知识库问答服务", "Nightly document summaries": "夜间文档摘要",
    "Assistant API (mixture of experts, fp8)": "助手API（混合专家，fp8）",
    "Object storage for checkpoints": "检查点对象存储", "Egress to users": "面向用户的出网流量",
    # the command line
    "Wrote": "已写入", "Period total {first} to {last}: {total}": "计划期合计 {first} 至 {last}：{total}",
    "  {month}: GPU {gpu} + commitments {commitments} + extras {extras} + buffer {buffer} = {total} {currency}":
    "  {month}：GPU {gpu} + 承诺 {commitments} + 额外费用 {extras} + 缓冲 {buffer} = {total} {currency}",
    "Recon {month}: GPU and commitments billed {gpu} against planned {planned}; total billed {billed} against "
    "planned {planned_all}; {flagged} flagged resource(s)":
    "对账 {month}：GPU与承诺账单 {gpu}，计划 {planned}；账单合计 {billed}，计划合计 {planned_all}；{flagged} 个资源被标记",
    " (partial month)": "（不完整月份）",
    "; {billed} billed in {code} converted at {rate} {currency} per 1 {code} ({as_of})":
    "；{billed} 以 {code} 计费，按每 1 {code} 折合 {rate} {currency}（{as_of}）换算",
    "Warning: ": "警告：", "Error: ": "错误：", ", ": "、",
    "{n} problem(s) found; nothing was written.": "发现 {n} 个问题；未写入任何文件。",
    "stopped by {signal}; no output was written or changed": "被 {signal} 中止；未写入或更改任何输出文件",
    "stopped by {signal} after writing {files}": "被 {signal} 中止，此前已写入 {files}",
    "OK: {tasks} tasks, {warnings} warning(s).": "通过：{tasks} 个任务，{warnings} 条警告。",
    "Wrote {path}: fill in the Tasks sheet, then run `budgetgen build {path}`.":
    "已写入 {path}：填写“任务”工作表，然后运行 `budgetgen build {path}`。",
    # Order, TaskList, the Summary's live sentences and banner, print and dropdown texts
    "Order list": "订购清单", "GPUs for": "GPU需求", "peak cards": "峰值卡数", "average cards": "平均卡数",
    "GPU cost only: extras and the hidden-cost buffer are on Summary.": "仅GPU成本：额外费用和隐性成本缓冲见汇总表。",
    "quantity": "数量", "unit price": "单价", "tasks served": "服务的任务", "provider / SKU": "供应商 / 规格型号",
    "notes": "备注", "cards by month": "每月卡数", "sign-off": "签核", "date": "日期", "signature": "签字",
    "prepared by": "编制人", "approved by": "审批人", "card-months": "卡·月",
    "provider: {provider}": "供应商：{provider}", " · region: {regions}": " · 区域：{regions}",
    "Subtotal {provider}": "{provider} 小计", "provider not given": "未注明供应商", "any": "不限",
    "All checks pass": "全部检查通过", "CHECKS FAIL — see Checks": "检查未通过 — 见 Checks 表",
    "{count} task(s) would cost less on their cheapest suited tier, saving {saving} a month (Tasks: tier advice)":
    "{count} 个任务改用最便宜的适用计费方式会更省钱，每月可省 {saving}（见任务表的计费建议）",
    "{tier} is over its cap in {months} plan month(s) (Tiers)": "{tier}在 {months} 个计划月超出上限（见 Tiers 表）",
    "GPU only": "仅GPU", "months over cap": "超上限月数",
    "the hidden-cost buffer is charged on the GPU cost only (BufferRate x GPU)":
    "隐性成本缓冲只按GPU成本计提（BufferRate × GPU）",
    "every task's GPU is on the GPUs sheet": "每个任务的GPU都在GPU表中",
    "Order total = Summary GPU total": "订购清单合计 = 汇总GPU合计",
    "Order GPU total = Summary GPU + commitments total": "订购清单GPU合计 = 汇总GPU合计 + 承诺合计",
    "Order plan total = Summary period total": "订购清单计划合计 = 汇总计划期合计",
    "reserve": "预留", "rent": "租用", "card-hours in plan": "计划内卡时", "card-hours": "卡时", "rate a card-hour": "每卡时单价",
    "total in plan": "计划内合计", "a month, 0 upfront": "每月（无预付）",
    "GPU total (reservations and rent)": "GPU合计（预留与租用）", "extras (Summary)": "额外费用（见汇总表）",
    "hidden-cost buffer (Summary)": "隐性成本缓冲（见汇总表）", "Plan total": "计划合计",
    "cards billed by month before the commitments": "承诺之前每月计费卡数",
    "quantity by month before the commitments": "承诺之前每月数量",
    "rent by month before the commitments": "承诺之前每月租金",
    "share of the GPU type's rent still rented": "该GPU型号仍需租用的租金比例",
    "Reservations replace the rent they cover: the rent lines are net of them, so nothing is counted twice.":
    "预留替代其覆盖的租金：租用行已扣除预留部分，不会重复计算。",
    "offer": "报价来源",
    ("which built-in offers price the catalog: auto (the market of the plan's currency where the catalog has offers "
     "in it, USD and CNY; else the USD offers, converted at the FX rate: one market per plan, never a card from "
     "another), plan (only offers in the plan's currency), or any (each card's offers in the plan's currency, else "
     "in another, converted); a card left without an offer is unpriced and a warning names it"):
    "内置目录取哪些报价：auto（目录中有计划币种报价时取该币种市场的报价，即美元和人民币；否则取美元报价，按汇率换算：每个计划只用一个市场，"
    "不会混入另一市场的显卡）、plan（只取计划币种的报价）或 any（每张卡先取计划币种报价，没有则取其他币种并换算）；没有报价的卡不定价，并有警告列出",
    "take built-in offers only from these providers (comma-separated, e.g. aws, lambda); blank: every provider":
    "只取这些供应商的内置报价（逗号分隔，例如 aws, lambda）；空白：全部供应商",
    ("take built-in offers only in these regions (comma-separated; an offer for any region counts); blank: every "
     "region"): "只取这些地区的内置报价（逗号分隔；不限地区的报价也计入）；空白：全部地区",
    ("whose offer the monthly price is (provider, or provider · region); blank: the row's provider and region. The "
     "built-in catalog takes each tier's cheapest eligible offer"):
    "包月价格来自谁的报价（供应商，或 供应商 · 地区）；空白：本行的供应商和地区。内置目录为每种计费方式取最便宜的可用报价",
    ("whose offer the on_demand price is (provider, or provider · region); blank: the row's provider and region. The "
     "built-in catalog takes each tier's cheapest eligible offer"):
    "按需价格来自谁的报价（供应商，或 供应商 · 地区）；空白：本行的供应商和地区。内置目录为每种计费方式取最便宜的可用报价",
    ("whose offer the idle price is (provider, or provider · region); blank: the row's provider and region. The "
     "built-in catalog takes each tier's cheapest eligible offer"):
    "闲置价格来自谁的报价（供应商，或 供应商 · 地区）；空白：本行的供应商和地区。内置目录为每种计费方式取最便宜的可用报价",
    ("whose offer the spot price is (provider, or provider · region); blank: the row's provider and region. The "
     "built-in catalog takes each tier's cheapest eligible offer"):
    "竞价价格来自谁的报价（供应商，或 供应商 · 地区）；空白：本行的供应商和地区。内置目录为每种计费方式取最便宜的可用报价",

    "model size": "模型规模", "training": "训练", "task id": "任务编号",
    ("Order lists what to buy or reserve per GPU type and tier, a block and a printed page per provider; TaskList "
     "is the tasks' key columns for printing (Tasks holds every column and prints across several pages)."):
    "Order 表列出按GPU型号和计费方式需要购买或预留的资源，每个供应商一个区块、打印时各占一页；TaskList 表是便于打印的任务关键列（Tasks 表含全部列，打印时跨多页）。",
    "value (formulas compare this)": "取值（公式比较此值）", "shown as": "显示为",
    "text of a Summary sentence": "汇总表语句的文字",
    "Not on the list": "不在列表中",
    # commitments (Commitments, Summary, Order, BuyVsRent, Checks, Settings)
    "Commitments: 1- and 3-year terms proposed from the plan's demand": "承诺：按计划需求建议的一年期和三年期承诺",
    ("A commitment starts with the plan and bills every hour of its term at its rate; it covers up to cards x "
     "HoursPerMonth of the GPU's demand and replaces the rent of the hours it covers. Proposed: the most cards "
     "whose last card is busy at least the break-even share of the term (months after the plan count 0); the "
     "longer term takes the demand first. Committed cards are an input: procurement may change them."):
    "承诺从计划开始，期内每小时按其价格计费；最多覆盖该GPU需求中的 卡数 × HoursPerMonth 小时，并替代所覆盖小时的租金。"
    "建议卡数：最后一张卡的忙碌时间至少占期限盈亏平衡比例的最多卡数（计划期之后的月份按0计）；期限较长的承诺先占需求。"
    "承诺卡数是输入项：采购可以修改。",
    "all commitments": "全部承诺", "committed cost": "承诺成本", "unused cost": "未使用成本",
    "rent displaced": "被替代的租金", "adjustment": "调整额", "term": "期限", "term (months)": "期限（月）",
    "commitment rate": "承诺价", "on-demand": "按需价", "replaced price": "被替代的每卡时租金", "proposed cards": "建议卡数",
    "committed cards": "承诺卡数", "monthly cost": "月成本", "term total": "期限总额",
    "months after plan": "计划期后月数", "after-plan cost": "计划期后成本", "GPU-hours demand": "GPU小时需求",
    "GPU rent": "GPU租金", "demand left to this commitment": "留给本承诺的需求",
    "cards this month suggests": "本月建议卡数", "covered hours": "覆盖小时", "unused hours": "未使用小时",
    "commitments": "承诺", "commitment": "承诺", "upfront": "预付",
    "effective hourly rate: nothing upfront, every hour of the term billed monthly":
    "有效小时价格：无预付，期内每小时按月计费",
    "the hidden-cost buffer is charged on the GPU cost only, commitments included (BufferRate x (GPU + commitments))":
    "隐性成本缓冲只按GPU成本（含承诺）计提（BufferRate × (GPU + 承诺)）",
    "best commitment": "最优承诺价", "break-even vs commitment (h/day)": "对比承诺的盈亏平衡（小时/日）",
    "Against the best commitment rate (Commitments), owning pays above this daily use.":
    "与最优承诺价（承诺表）相比，日使用超过此值时自购更划算。",
    "GPU + commitments + extras + buffer = period total": "GPU + 承诺 + 额外费用 + 缓冲 = 计划期合计",
    "buffer = rate x (GPU + commitments) total": "缓冲 = 比率 × (GPU + 承诺) 合计",
    "Commitments sheet adjustment = Summary commitments total": "承诺表调整额 = 汇总表承诺合计",
    "GPUs priced on GPUs since the build for a task they fit = 0 (if not: rebuild to weigh them)":
        "构建后在GPU表中新填价格、可运行某任务的GPU数 = 0（否则：请重新构建以参与比较）",
    "tasks a cheaper GPU could run now = at build (if not: rebuild to choose again)":
        "现有更便宜GPU的任务数 = 生成时的数目（否则请重新生成以重新选择）",
    "billed total = BilledCost of the month": "账单合计 = 当月输入的BilledCost",
    "whether the engine may choose a consumer (GeForce) card for an online service: excluded (default: NVIDIA's "
    "GeForce driver licence allows no datacenter deployment) or allowed; a card the task names is kept":
        "引擎能否为在线服务选用消费级（GeForce）显卡：excluded（默认：NVIDIA GeForce 驱动许可不允许数据中心部署）或 "
        "allowed；任务指定的显卡保留",
    "gpu named in the input": "输入中指定的GPU", "named": "已指定",
    "cheaper GPU now": "现更便宜的GPU", "saving on it": "改用可省",
    "saving against the chosen GPU": "相对所选GPU的节省", "task's best saving so far": "该任务至此最大节省",
    "task's cheaper GPU so far": "该任务至此更便宜的GPU",
    **{s.help: f"{t.zh}：GPU表的 {t.price_column} 为空时，每承诺卡时有效价格相对按需价的折扣（默认值及其来源见 docs/input-reference.md）"
       for t in COMMITMENT_TIERS for s in COMMITMENT_SETTINGS if s.key == t.discount_setting},
    ("Choose from the list: formulas compare these values (gpu: a name on the GPUs sheet; model: on the Models "
     "sheet)."):
    "请从列表中选择：公式比较这些值（GPU：GPU表中的名称；模型：模型表中的名称）。",
}

# Warnings: (English, Chinese) templates over named parameters; `!t` renders an enumeration value.
MESSAGES = {
    "usage_without_bills": (
        "usage {files!l} given without a bill: read and checked, but there is nothing to reconcile it against",
        "提供了用量 {files!l} 但没有账单：已读取并检查，但没有可对账的账单"),
    "unknown_bill_task": (
        ("{file}: task_id {value} matches no task of the plan (ignoring case): its lines count as billed to an "
         "unplanned task"),
        "{file}：task_id {value} 与计划中的任何任务都不匹配（不区分大小写）：其费用行计为计划外任务的账单"),
    "unmatched_usage": (
        ("{file}: resource {value} matches no billed ResourceId (exactly, case included): its usage is left out; "
         "name the file or its resource_id after the bill's ResourceId"),
        ("{file}：资源 {value} 与账单中的任何 ResourceId 都不匹配（完全一致，区分大小写）：其用量未计入；"
         "请按账单的 ResourceId 命名文件或填写 resource_id")),
    "unbilled_usage_months": (
        ("{file}: resource {value} has usage in {months}, which no bill line of that resource covers: that usage is "
         "left out; add the month's bill, or check the usage file's dates"),
        "{file}：资源 {value} 在 {months} 有用量，但账单中该资源没有这些月份的费用行：这部分用量未计入；请加入该月账单，或检查用量文件的日期"),
    "bill_sums_bad_value": (
        ('{column} "{raw}" cannot be read: the file must be the result of `budgetgen bill-sql` for billing time zone '
         "{zone}, in the plan's currency"),
        '{column} "{raw}" 无法读取：文件须为计费时区 {zone}、计划币种下 `budgetgen bill-sql` 的查询结果'),
    "bill_sums_with_bills": (
        "--bill-sums replaces the bill lines: give it without --bills and without a Bills sheet",
        "--bill-sums 代替账单行：请勿同时使用 --bills 或 Bills 工作表"),
    "duplicate_lines": (
        "{month}: {lines:,} bill line(s) found again in a later bill ({amount:,.2f}) counted once",
        "{month}：{lines:,} 条账单行在后面的账单中重复出现（{amount:,.2f}），只计一次"),
    "consumer_training": (
        ("{tid}: {gpu} is a consumer card for {hours:,.0f} GPU-hours a month of training (over {limit}): "
         "long continuous runs belong on datacenter cards"),
        "{tid}：{gpu} 是消费级显卡，每月训练 {hours:,.0f} GPU小时（超过 {limit}）：长时间连续训练应使用数据中心显卡"),
    "pcie_scaling": (
        "{tid}: {cards} cards where {cards_min} fit, on PCIe {gpu} (poor scaling: speedup {speedup:.2f})",
        "{tid}：{cards_min} 张即可放下却用了 {cards} 张 PCIe {gpu}（扩展性差：加速比 {speedup:.2f}）"),
    "cards_over_max_cards": (
        "{tid}: cards {cards} is more than max_cards {max_cards}: cards counts the cards of one run or replica",
        "{tid}：cards 为 {cards}，超过 max_cards {max_cards}：cards 是每次运行或每个副本的卡数"),
    "no_peak_headroom": (
        ("{tid}: its {replicas} replica(s) serve an even spread of the day's requests with {spare:.0%} to spare "
        "(under {limit:.0%}) and peak_factor is {peak:g}: a busier hour queues; set peak_factor to your busiest "
        "hour's requests over the average hour's"),
        ("{tid}：{replicas} 个副本承担均匀分布的每日请求，仅余 {spare:.0%} 余量（低于 {limit:.0%}），而 peak_factor 为 "
        "{peak:g}：高峰时段会排队；请把 peak_factor 设为最忙一小时的请求数与平均每小时请求数之比")),
    "no_failover": (
        "{tid}: one replica, no failover: a card fault stops the service (min_replicas 2 keeps a spare)",
        "{tid}：只有一个副本，没有故障切换：一张卡故障就会让服务停止（min_replicas 设为 2 可保留备用）"),
    "consumer_serving": (
        ("{tid}: {gpu} is a consumer card serving {hours:g} h a day (over {limit}): round-the-clock serving belongs "
         "on datacenter cards"),
        "{tid}：{gpu} 是消费级显卡，每天服务 {hours:g} 小时（超过 {limit}）：全天候服务应使用数据中心显卡"),
    "slow_stream": (
        "{tid}: a user sees {tps:.1f} tokens/s (under {limit}): set a lower concurrency or choose a faster card",
        "{tid}：单个用户只能看到 {tps:.1f} token/s（低于 {limit}）：请降低并发数或选择更快的显卡"),
    "inference_on_spot": (
        "{tid}: online inference on spot: an interruption takes the service down",
        "{tid}：在线推理使用竞价实例：一次中断就会让服务下线"),
    "tier_saving": (
        "{tid}: {cheapest!t} is cheaper than {tier!t} by {saving:,.0f} a month",
        "{tid}：{cheapest!t}比{tier!t}每月便宜 {saving:,.0f}"),
    "buffer_outside_guidance": (
        "hidden_cost_buffer {rate:.0%} is outside the 20-30% guidance",
        "隐性成本缓冲 {rate:.0%} 超出 20-30% 的建议范围"),
    "tier_over_cap": (
        "{tier!t} is over its cap of {cap:,.0f} in {months}",
        "{tier!t}在 {months} 超出上限 {cap:,.0f}"),
    "example_rows": (
        "{ids}: the template's example rows are still in the Tasks sheet; delete them before sending the budget",
        "{ids}：模板的示例行仍在任务表中；发送预算前请删除"),
    "serving_without_model": (
        ("{tids}: sized from the parameter count alone (no model, or no prompt_tokens: {prompt:,} assumed); name a "
         "catalog model (`budgetgen models`) and give prompt_tokens, or type a measured tokens_per_sec"),
        ("{tids}：仅按参数量估算（未填 model 或 prompt_tokens：假定 {prompt:,}）；请填写目录中的模型（`budgetgen models`）"
         "和 prompt_tokens，或填写实测的 tokens_per_sec")),
    "gpus_unpriced": (
        ("{gpus}: left out of the choice for the tasks named: no price on any tier those tasks may use (the built-in "
         "catalog takes one market's offers: the plan currency's, or USD's where it has none, while offer_currency "
         "is auto; the plan currency's only while it is plan; and only from the providers and regions the settings "
         "name); enter a quote on the GPUs sheet, or set offer_currency to any, to have them compared"),
        ("{gpus}：对所列任务可用的任何计费方式都没有价格，未参与选择（offer_currency 为 auto 时内置目录只取一个市场的报价："
         "计划币种的，没有时取美元的；为 plan 时只取计划币种的；且只取设置中指定的供应商和地区）；在GPU表中填写报价，"
         "或把 offer_currency 设为 any，即可参与比较")),
    "gpus_unpriced_any": (
        ("{gpus}: left out of the choice for the tasks named: no offer of the built-in catalog, in any currency, "
         "prices them on a tier those tasks may use (only the providers and regions the settings name count); enter "
         "a quote on the GPUs sheet to have them compared"),
        ("{gpus}：内置目录中没有任何币种的报价为所列任务可用的计费方式定价，未参与选择（只计设置中指定的供应商和地区）；"
         "在GPU表中填写报价，即可参与比较")),
    "default_tier_unpriced": (
        ("{tid}: no card that runs it has a price on {default!t} (its kind's default tier): planned on {tier!t}, "
         "the cheapest priced; type a tier, or prices, to change it"),
        ("{tid}：能运行它的显卡都没有{default!t}价格（该类型的默认计费方式）：已按最便宜的有价计费方式{tier!t}规划；"
         "可填写计费方式或价格来更改")),
    "fx_rate_old": (
        ("{currency} prices are converted at {rate:.6g} {plan} per {currency}, the rate of {as_of}: more than {days} "
         "days before the plan starts ({start}); type a current rate on the FX sheet (currency, rate, as_of, source)"),
        ("{currency} 价格按 {as_of} 的汇率 {rate:.6g} {plan}/{currency} 换算：早于计划开始（{start}）超过 {days} 天；"
         "请在 FX 表中填写当前汇率（currency、rate、as_of、source）")),
    "fx_unknown_builtin": (
        ("no {currency} to {plan} rate is known, so the built-in {currency} prices of {names} are left out: add a "
         "row for {currency} on an FX sheet (currency, rate) or type prices on the GPUs sheet"),
        ("未知 {currency} 兑 {plan} 的汇率，{names} 的内置 {currency} 价格未被采用：请在汇率（FX）表中添加 {currency} 行"
         "（币种、汇率值），或在GPU表中填写价格")),
    "fx_unknown": (
        ("no {currency} to {plan} rate is known: add a row for {currency} on an FX sheet (currency, rate), or type "
         "the prices in {plan}"),
        "未知 {currency} 兑 {plan} 的汇率：请在汇率（FX）表中添加 {currency} 行（币种、汇率值），或以 {plan} 填写价格"),
    "duplicate_fx": ("{currency} is on the FX sheet twice (first at {first})", "{currency} 在汇率表中重复（首次在 {first}）"),
    "fx_plan_currency": ("{currency} is the plan currency: its rate is 1, not {rate:g}",
                         "{currency} 是计划币种：汇率为 1，而不是 {rate:g}"),
    "money_default_no_rate": (
        "{setting} has no default in {plan} (its default is {value:g} {currency} and no rate is known): type it",
        "{setting} 在 {plan} 中没有默认值（默认值为 {value:g} {currency}，且汇率未知）：请填写"),
    # the catalog check (catalog.catalog_warnings); {place} is catalog_cell or catalog_builtin
    "catalog_monthly_over_on_demand": (
        ("{gpu}: monthly_per_card {monthly:,g} is more than {hours:,g} h x on_demand_per_hour {on_demand:,g} = "
         "{around_the_clock:,g}: on demand would be cheaper even around the clock; check the prices ({place})"),
        ("{gpu}：包月单价 monthly_per_card {monthly:,g} 高于 {hours:,g} 小时 × 按需单价 on_demand_per_hour {on_demand:,g} = "
         "{around_the_clock:,g}：即使全天运行按需也更便宜；请核对价格（{place}）")),
    "catalog_idle_over_on_demand": (
        ("{gpu}: idle_per_hour {price:,g} is more than on_demand_per_hour {on_demand:,g}: idle capacity should cost "
         "less than on demand; check the prices ({place})"),
        "{gpu}：闲置单价 idle_per_hour {price:,g} 高于按需单价 on_demand_per_hour {on_demand:,g}：闲置资源应比按需便宜；请核对价格（{place}）"),
    "catalog_spot_over_on_demand": (
        ("{gpu}: spot_per_hour {price:,g} is more than on_demand_per_hour {on_demand:,g}: interruptible capacity "
         "should cost less than on demand; check the prices ({place})"),
        "{gpu}：竞价单价 spot_per_hour {price:,g} 高于按需单价 on_demand_per_hour {on_demand:,g}：可中断资源应比按需便宜；请核对价格（{place}）"),
    "catalog_prices_old": (
        ("{gpu}: prices as_of {as_of} are more than {months} months before {when}: "
         "check them with your provider and enter current ones on the GPUs sheet ({place})"),
        "{gpu}：价格日期 as_of {as_of} 早于{when}超过 {months} 个月：请向供应商核实，并在GPU表中填写当前价格（{place}）"),
    "catalog_prices_undated": (
        ("{gpu}: the source of its prices states no date (read {read}), so how old they are is unknown: check them "
         "with your provider and enter current ones on the GPUs sheet, with their date ({place})"),
        "{gpu}：其价格来源未注明日期（读取于 {read}），价格新旧未知：请向供应商核实，并在GPU表中填写当前价格及其日期（{place}）"),
    "catalog_prices_undated_old": (
        ("{gpu}: the source of its prices states no date and was read on {read}, more than {months} months before "
         "{when}: the prices are at least that old; check them with your provider and enter current ones on the GPUs "
         "sheet ({place})"),
        "{gpu}：其价格来源未注明日期，读取于 {read}，早于{when}超过 {months} 个月：价格至少已这么旧；请向供应商核实，并在GPU表中填写当前价格（{place}）"),
    "catalog_age_build_date": ("the build date {build_date}", "编制日期 {build_date} "),
    "catalog_age_plan_month": ("the plan month {month} they pay for", "其计价的计划月份 {month} "),
    "catalog_cell": ("{cell}", "{cell}"),
    "catalog_builtin": ("built-in catalog", "内置目录"),
    # warnings.group_warnings: one line per kind, its count and items (`!l` a list, `!i` whole warnings)
    "warnings_grouped": ("{count} warnings of one kind: {items!i}", "{count} 条同类警告：{items!i}"),
    "warnings_more": ("... and {count:,} more", "……另有 {count:,} 项"),
    "item_value": ("{value}", "{value}"),
    "item_file": ("{file}", "{file}"),
    "item_tid": ("{tid}", "{tid}"),
    "over_budget_item": ("{center}: {months} month(s) over {budget}, {overrun} over in all",
                         "{center}：{months} 个月超出 {budget}，共超出 {overrun}"),
    "over_budget_grouped": ("{count} budget lines over in some plan month (Budgets): {items!l}",
                            "{count} 条预算在部分计划月超出（见预算表）：{items!l}"),
    "unknown_bill_task_grouped": (
        ("{file}: {count} task_ids match no task of the plan (ignoring case): {items!l}; their lines count as "
         "billed to unplanned tasks"),
        "{file}：{count} 个 task_id 与计划中的任何任务都不匹配（不区分大小写）：{items!l}；其费用行计为计划外任务的账单"),
    "unmatched_usage_grouped": (
        ("{file}: {count} resources match no billed ResourceId (exactly, case included): {items!l}; their usage is "
         "left out: name the file or its resource_id after the bill's ResourceId"),
        ("{file}：{count} 个资源与账单中的任何 ResourceId 都不匹配（完全一致，区分大小写）：{items!l}；其用量未计入："
         "请按账单的 ResourceId 命名文件或填写 resource_id")),
    "unbilled_usage_months_item": ("{value} ({months})", "{value}（{months}）"),
    "unbilled_usage_months_grouped": (
        ("{file}: {count} resources have usage in months no bill line of theirs covers: {items!l}; that usage is "
         "left out: add the month's bill, or check the usage file's dates"),
        "{file}：{count} 个资源在账单未覆盖的月份有用量：{items!l}；这部分用量未计入：请加入该月账单，或检查用量文件的日期"),
    "duplicate_lines_item": ("{month}: {lines:,} line(s), {amount:,.2f}", "{month}：{lines:,} 条，{amount:,.2f}"),
    "duplicate_lines_grouped": (
        "Bill lines found again in a later bill, counted once, in {count} months: {items!l}",
        "{count} 个月份有账单行在后面的账单中重复出现，只计一次：{items!l}"),
    "bill_without_lines_grouped": (
        "{count} files have the bill's columns but no line: {items!l}; nothing of them is reconciled",
        "{count} 个文件有账单的列但没有任何行：{items!l}；其中没有可对账的内容"),
    "bill_without_currency_grouped": (
        ("{count} files have no BillingCurrency column: {items!l}; their amounts are taken to be in the plan's "
         "currency {currency}: add the column to have them checked"),
        "{count} 个文件没有 BillingCurrency 列：{items!l}；其金额按计划货币 {currency} 计：请添加该列以便核对"),
    "inference_on_spot_grouped": (
        "Online inference on spot for {count} services: {items!l}; an interruption takes a service down",
        "{count} 个在线推理服务使用竞价实例：{items!l}；一次中断就会让服务下线"),
    "no_failover_grouped": (
        ("One replica, no failover, for {count} services: {items!l}; a card fault stops the service (min_replicas 2 "
         "keeps a spare)"),
        "{count} 个服务只有一个副本，没有故障切换：{items!l}；一张卡故障就会让服务停止（min_replicas 设为 2 可保留备用）"),
    "no_peak_headroom_item": ("{tid} ({replicas} replica(s), {spare:.0%} to spare)",
                              "{tid}（{replicas} 个副本，余量 {spare:.0%}）"),
    "no_peak_headroom_grouped": (
        ("Under {limit:.0%} to spare at an even spread of the day's requests, with peak_factor {peak:g}, for {count} "
         "services: {items!l}; a busier hour queues: set peak_factor to your busiest hour's requests over the "
         "average hour's"),
        ("{count} 个服务在每日请求均匀分布时余量低于 {limit:.0%}，而 peak_factor 为 {peak:g}：{items!l}；高峰时段会排队："
         "请把 peak_factor 设为最忙一小时的请求数与平均每小时请求数之比")),
    "consumer_serving_item": ("{tid} ({gpu}, {hours:g} h a day)", "{tid}（{gpu}，每天 {hours:g} 小时）"),
    "consumer_serving_grouped": (
        ("Consumer cards serving more than {limit} h a day for {count} services: {items!l}; round-the-clock serving "
         "belongs on datacenter cards"),
        "{count} 个服务使用消费级显卡每天服务超过 {limit} 小时：{items!l}；全天候服务应使用数据中心显卡"),
    "consumer_training_item": ("{tid} ({gpu}, {hours:,.0f} GPU-hours a month)",
                               "{tid}（{gpu}，每月 {hours:,.0f} GPU小时）"),
    "consumer_training_grouped": (
        ("Consumer cards for more than {limit} GPU-hours a month of training in {count} tasks: {items!l}; long "
         "continuous runs belong on datacenter cards"),
        "{count} 个任务使用消费级显卡每月训练超过 {limit} GPU小时：{items!l}；长时间连续训练应使用数据中心显卡"),
    "slow_stream_item": ("{tid} ({tps:.1f} tokens/s)", "{tid}（{tps:.1f} token/s）"),
    "slow_stream_grouped": (
        "A user sees under {limit} tokens/s on {count} services: {items!l}; set a lower concurrency or choose a faster card",
        "{count} 个服务的单个用户只能看到低于 {limit} token/s：{items!l}；请降低并发数或选择更快的显卡"),
    "cards_over_max_cards_item": ("{tid} ({cards})", "{tid}（{cards}）"),
    "cards_over_max_cards_grouped": (
        ("cards more than max_cards {max_cards} for {count} tasks: {items!l}; cards counts the cards of one run or "
         "replica"),
        "{count} 个任务的 cards 超过 max_cards {max_cards}：{items!l}；cards 是每次运行或每个副本的卡数"),
    "pcie_scaling_item": ("{tid} ({cards} x {gpu} where {cards_min} fit, speedup {speedup:.2f})",
                          "{tid}（{cards_min} 张即可放下却用了 {cards} 张 {gpu}，加速比 {speedup:.2f}）"),
    "pcie_scaling_grouped": ("More PCIe cards than fit, scaling poorly, for {count} tasks: {items!l}",
                             "{count} 个任务使用了多于所需的 PCIe 显卡，扩展性差：{items!l}"),
    "default_tier_unpriced_item": ("{tid} ({default!t} -> {tier!t})", "{tid}（{default!t} → {tier!t}）"),
    "default_tier_unpriced_grouped": (
        ("No card that runs them has a price on their kind's default tier, so {count} tasks are planned on the "
         "cheapest priced tier: {items!l}; type a tier, or prices, to change it"),
        "能运行这 {count} 个任务的显卡都没有该类型默认计费方式的价格，已按最便宜的有价计费方式规划：{items!l}；可填写计费方式或价格来更改"),
    "tier_over_cap_item": ("{tier!t} (cap {cap:,.0f}: {months})", "{tier!t}（上限 {cap:,.0f}：{months}）"),
    "tier_over_cap_grouped": ("{count} tiers over their caps: {items!l}", "{count} 种计费方式超出上限：{items!l}"),
    "catalog_monthly_over_on_demand_item": ("{gpu} ({monthly:,g} > {around_the_clock:,g}, {place})",
                                            "{gpu}（{monthly:,g} > {around_the_clock:,g}，{place}）"),
    "catalog_monthly_over_on_demand_grouped": (
        ("monthly_per_card above {hours:,g} h x on_demand_per_hour for {count} GPUs: {items!l}; on demand would be "
         "cheaper even around the clock: check the prices"),
        ("{count} 个 GPU 的包月单价 monthly_per_card 高于 {hours:,g} 小时 × 按需单价 on_demand_per_hour：{items!l}；"
         "即使全天运行按需也更便宜：请核对价格")),
    "catalog_over_on_demand_item": ("{gpu} ({price:,g} > {on_demand:,g}, {place})",
                                    "{gpu}（{price:,g} > {on_demand:,g}，{place}）"),
    "catalog_idle_over_on_demand_grouped": (
        ("idle_per_hour above on_demand_per_hour for {count} GPUs: {items!l}; idle capacity should cost less than "
         "on demand: check the prices"),
        "{count} 个 GPU 的闲置单价 idle_per_hour 高于按需单价 on_demand_per_hour：{items!l}；闲置资源应比按需便宜：请核对价格"),
    "catalog_spot_over_on_demand_grouped": (
        ("spot_per_hour above on_demand_per_hour for {count} GPUs: {items!l}; interruptible capacity should cost "
         "less than on demand: check the prices"),
        "{count} 个 GPU 的竞价单价 spot_per_hour 高于按需单价 on_demand_per_hour：{items!l}；可中断资源应比按需便宜：请核对价格"),
    "tier_saving_item": ("{tid} ({cheapest!t} instead of {tier!t}, {saving:,.0f} a month)",
                         "{tid}（{cheapest!t}代替{tier!t}，每月 {saving:,.0f}）"),
    "tier_saving_grouped": ("A cheaper tier for {count} tasks, {total:,.0f} a month in all: {items!l}",
                            "{count} 个任务有更便宜的计费方式，合计每月 {total:,.0f}：{items!l}"),
    "catalog_prices_old_item": ("{gpu} ({as_of}, {place})", "{gpu}（{as_of}，{place}）"),
    "catalog_prices_old_grouped": (
        ("Prices of {count} GPUs are more than {months} months older than {when}: {items!l}; check them with your "
         "provider and enter current ones on the GPUs sheet"),
        "{count} 个 GPU 的价格早于{when}超过 {months} 个月：{items!l}；请向供应商核实，并在GPU表中填写当前价格"),
    "catalog_prices_undated_item": ("{gpu} ({place})", "{gpu}（{place}）"),
    "catalog_prices_undated_grouped": (
        ("Prices of {count} GPUs come from sources that state no date (read {read}), so how old they are is unknown: "
         "{items!l}; check them with your provider and enter current ones on the GPUs sheet, with their date"),
        "{count} 个 GPU 的价格来源未注明日期（读取于 {read}），价格新旧未知：{items!l}；请向供应商核实，并在GPU表中填写当前价格及其日期"),
    "catalog_prices_undated_old_grouped": (
        ("Prices of {count} GPUs come from sources that state no date and were read on {read}, more than {months} "
         "months before {when}: they are at least that old: {items!l}; check them with your provider and enter "
         "current ones on the GPUs sheet"),
        ("{count} 个 GPU 的价格来源未注明日期，读取于 {read}，早于{when}超过 {months} 个月，价格至少已这么旧：{items!l}；"
         "请向供应商核实，并在GPU表中填写当前价格")),
    "offer_filter_name_unused": (("{setting}: {name} adds no built-in offer this plan takes ({place}): {hint}"),
                                 "{setting}：{name} 没有增加本计划可用的内置报价（{place}）：{hint}"),
    "fit_one_run": (("{cell}: the fitted {figure} rests on this one run, no spread to measure; add runs before "
                     "planning on it"),
                    "{cell}：拟合出的 {figure} 只基于这一条运行，无法衡量其离散程度；请补充运行后再据此做计划"),
}

# Input problems (errors.Problem.message): (English, Chinese) templates like the warnings'. Column names, sheet
# names and setting keys stay ASCII in both languages; `!n` renders a unit or help text, `!l` a list of values,
# and a parameter that is itself a Message renders in the same language.
PROBLEMS = {
    # a cell's value (values.BadValue), prefixed by its column with "cell_value"
    "cell_value": ("{column}: {problem}", "{column}：{problem}"),
    "not_a_number": ('"{raw}" is not a number ({what!n}, {example})', '"{raw}" 不是数字（{what!n}，{example}）'),
    "example_billions": ("e.g. 7 or 7B", "例如 7 或 7B"),
    "example_percent": ("e.g. 40% or 0.4", "例如 40% 或 0.4"),
    "example_number": ("e.g. 1500 or 1.5k", "例如 1500 或 1.5k"),
    "not_finite": ('"{raw}" is not a finite number ({what!n})', '"{raw}" 不是有限的数（{what!n}）'),
    "not_positive": ("{shown} must be greater than zero ({what!n})", "{shown} 必须大于零（{what!n}）"),
    "below_minimum": ("{shown} must be at least {lo:g} ({what!n})", "{shown} 必须不小于 {lo:g}（{what!n}）"),
    "above_maximum": ("{shown} must be at most {hi:g} ({what!n})", "{shown} 必须不大于 {hi:g}（{what!n}）"),
    "comma_not_thousands": (
        '"{raw}" is not a number: a comma may only separate thousands (1,500); write decimals with a point (1.5)',
        '"{raw}" 不是数字：逗号只能用作千位分隔符（1,500）；小数请用小数点（1.5）'),
    "formula_without_value": (
        "holds a formula with no saved result: open and save it in Excel, or type the value",
        "含有没有保存结果的公式：请在 Excel 中打开并保存，或直接填写数值"),
    "too_large": ("{shown} is too large ({what!n}): at most {bound:g}", "{shown} 太大（{what!n}）：最大为 {bound:g}"),
    "too_small": ("{shown} is too small ({what!n}): at least {bound:g}", "{shown} 太小（{what!n}）：最小为 {bound:g}"),
    "too_close_to_zero": ("{shown} is too close to zero ({what!n}): write a number of {smallest:g} or more",
                          "{shown} 太接近零（{what!n}）：请填写不小于 {smallest:g} 的数"),
    "too_close_to_zero_or_0": ("{shown} is too close to zero ({what!n}): write 0 or a number of {smallest:g} or more",
                               "{shown} 太接近零（{what!n}）：请填写 0 或不小于 {smallest:g} 的数"),
    "not_whole": ("{shown} must be a whole number ({unit!n})", "{shown} 必须是整数（{unit!n}）"),
    "not_a_month": ('"{raw}" is not a month (write YYYY-MM, e.g. 2026-07)',
                    '"{raw}" 不是月份（请写成 YYYY-MM，例如 2026-07）'),
    "not_a_date": ('"{raw}" is not a date (write YYYY-MM-DD, e.g. 2026-07-01)',
                   '"{raw}" 不是日期（请写成 YYYY-MM-DD，例如 2026-07-01）'),
    "not_a_choice": ('"{raw}" is not one of {choices!l}', '"{raw}" 不是以下之一：{choices!l}'),
    # the reader
    "missing_tasks_sheet": (
        "sheet is missing: the workbook needs a Tasks sheet (run `budgetgen init FILE` for a template)",
        "工作表缺失：工作簿需要 Tasks（任务）工作表（运行 `budgetgen init FILE` 获取模板）"),
    "sheet_empty": ("the sheet is empty: it needs a header row in row 1", "工作表为空：第 1 行需要表头"),
    "header_not_in_row_1": ("row 1 must hold the column headers", "第 1 行必须是列标题"),
    "duplicate_column": ('column "{text}" appears twice: keep one', '列 "{text}" 出现了两次：只保留一列'),
    "duplicate_sheet": ('sheets "{first}" and "{second}" are both the {sheet} sheet: keep one',
                        '工作表 "{first}" 和 "{second}" 都是 {sheet} 工作表：只保留一个'),
    "duplicate_setting": ("setting {setting} is already given in {first}: keep one row",
                          "设置项 {setting} 已在 {first} 中给出：只保留一行"),
    "duplicate_gpu": ('gpu: "{gpu}" is already given in {first} (GPU names must be unique, ignoring case): keep one row',
                      'gpu："{gpu}" 已在 {first} 中给出（GPU 名称必须唯一，不区分大小写）：只保留一行'),
    "missing_column": ("missing required column {column} ({help!n}): add it to the header row",
                       "缺少必填列 {column}（{help!n}）：请在表头行中添加"),
    "text_too_long": (
        "{column}: text of {length:,} characters is longer than a cell holds ({limit:,}): shorten it",
        "{column}：文本有 {length:,} 个字符，超过一个单元格的上限（{limit:,}）：请缩短"),
    "setting_blank": ("setting: blank; name the setting (e.g. period_start) or clear the row",
                      "setting：为空；请填写设置项名称（例如 period_start）或清空该行"),
    "unknown_setting": ('setting "{setting}" is unknown ({hint})', '设置项 "{setting}" 未知（{hint}）'),
    "did_you_mean": ("did you mean {guess}?", "是否应为 {guess}？"),
    "excluded_cards_too_slow": (
        ("{given} x {gpu} take {hours:,.0f} h a run, past the deadline of {days:g} days: {cards} cards finish in "
         "time, or lengthen deadline_days"),
        ("{given} × {gpu} 每次运行需 {hours:,.0f} 小时，超过 {days:g} 天的截止期限：{cards} 张卡才能按时完成，"
         "或延长 deadline_days")),
    "excluded_replica": ("needs more than 8 cards per replica: use fp8/int4 or a larger card",
                         "每个副本需要超过 8 张卡：请使用 fp8/int4 或更大显存的显卡"),
    "excluded_too_slow": ("needs {cards} x {gpu} to finish in {days:g} days, max_cards is {max_cards}",
                          "需要 {cards} × {gpu} 才能在 {days:g} 天内完成，max_cards 为 {max_cards}"),
    "named_gpu_excluded": ("gpu: {reason}", "gpu：{reason}"),
    "deadline_within_setup": (
        ("deadline_days: {days:g} days ({hours:g} h) is no longer than the {setup:g} h of setup_hours every run "
         "starts with, so no GPU finishes a run: lengthen deadline_days or lower setup_hours on Settings"),
        ("deadline_days：{days:g} 天（{hours:g} 小时）不长于每次运行开始前的 {setup:g} 小时 setup_hours，"
         "没有显卡能完成一次运行：请延长 deadline_days 或在 Settings 中降低 setup_hours")),
    "runs_within_setup": (
        ("runs_per_month: {runs:g} runs a month leave {hours:g} h a run, no longer than the {setup:g} h of "
         "setup_hours every run starts with, so no GPU finishes a run: run less often, give deadline_days or lower "
         "setup_hours on Settings"),
        ("runs_per_month：每月 {runs:g} 次运行，每次只有 {hours:g} 小时，不长于每次运行开始前的 {setup:g} 小时 "
         "setup_hours，没有显卡能完成一次运行：请减少运行次数、填写 deadline_days 或在 Settings 中降低 setup_hours")),
    "no_gpu_in_time": (
        ("no GPU finishes a run within {days:g} days on at most {max_cards} cards: the fastest option is {cards} x "
         "{gpu}; raise max_cards, lengthen deadline_days or shorten the run"),
        ("没有显卡能在 {max_cards} 张以内于 {days:g} 天内完成一次运行：最快的方案是 {cards} × {gpu}；"
         "请提高 max_cards、延长 deadline_days 或缩短运行")),
    "see_models": ("`budgetgen models` lists the catalog; add the model on a Models sheet",
                   "`budgetgen models` 列出模型目录；也可在 Models（模型）工作表中添加"),
    "unknown_model": ('model: "{model}" is not a catalog model ({hint})', 'model："{model}" 不在模型目录中（{hint}）'),
    "duplicate_model": (('model: "{model}" is already given in {first} (model names must be unique, ignoring case): '
                         "keep one row"),
                        'model："{model}" 已在 {first} 中给出（模型名称必须唯一，不区分大小写）：只保留一行'),
    "model_row": ("{problem}", "{problem}"),
    "see_settings": ("see the list of settings in docs/input-reference.md", "见 docs/input-reference.md 中的设置项列表"),
    "currency_code": ('currency: "{raw}" is not an ISO currency code (three letters, e.g. USD, EUR, CNY)',
                      'currency："{raw}" 不是 ISO 币种代码（三个字母，例如 USD、EUR、CNY）'),
    "setting_between": ("{setting}: {value:g} must be between {lo:g} and {hi:g}",
                        "{setting}：{value:g} 必须介于 {lo:g} 和 {hi:g} 之间"),
    "setting_at_least": ("{setting}: {value:g} must be at least {lo:g}", "{setting}：{value:g} 必须不小于 {lo:g}"),
    "gpu_required": ("{column}: required for a GPU that is not in the built-in catalog ({gpu})",
                     "{column}：不在内置目录中的 GPU 必须填写（{gpu}）"),
    "gpu_currency": (
        ("currency: the row's prices are in {currency}, the plan is in {plan}: enter them in {plan} "
         "(or make the plan {currency})"),
        "currency：本行价格为 {currency}，计划币种为 {plan}：请以 {plan} 填写价格（或将计划币种改为 {currency}）"),
    "price_file_format": (
        ("is neither a price snapshot (columns {snapshot!l}), a SkyPilot catalog file (vms.csv: columns {vms!l}) nor "
         "a quote sheet (columns {quotes!l}): check the header row"),
        "既不是价格快照（列 {snapshot!l}）、SkyPilot 目录文件（vms.csv：列 {vms!l}）也不是报价表（列 {quotes!l}）：请检查表头行"),
    "quote_ambiguous_gpu": (('gpu: "{gpu}" does not tell which card (form factor, memory) it is: name the catalog '
                             'card ({cards!l})'),
                            'gpu："{gpu}" 未说明是哪种卡（规格、显存）：请写明目录中的卡（{cards!l}）'),
    "quote_unknown_gpu": ('gpu: "{gpu}" is not a catalog GPU or a known label ({hint})',
                          'gpu："{gpu}" 不是目录中的GPU或已知标签（{hint}）'),
    "quote_duplicate": ("tier: {tier} of {gpu} from {provider} in {region} is already quoted at {first}: keep one row",
                        "tier：{provider}（{region}）的 {gpu} {tier} 价格已在 {first} 报出：只保留一行"),
    "see_catalog": ("`budgetgen catalog` lists the GPUs", "`budgetgen catalog` 列出目录中的GPU"),
    "required": ("{column}: required ({help!n})", "{column}：必填（{help!n}）"),
    "required_for_kind": ("{column}: required for {kind!t} tasks ({unit!n}): fill it in",
                          "{column}：{kind!t}任务必填（{unit!n}）：请填写"),
    "method_for_kind": ('method: "{method}" is not a method for {kind!t} tasks (use {allowed!l})',
                        'method："{method}" 不适用于{kind!t}任务（请使用 {allowed!l}）'),
    "mfu_range": ("mfu: {mfu:g} must be above 0 and at most 1 (e.g. 40%)", "mfu：{mfu:g} 必须大于 0 且不超过 1（例如 40%）"),
    "budget_unknown_center": (('cost_center: "{center}" is no task\'s cost center (they are: {centers}); blank: the '
                              "whole plan"), 'cost_center："{center}" 不是任何任务的成本中心（现有：{centers}）；留空表示整个计划'),
    "budget_duplicate": ("a budget for {center} is on the Budgets sheet twice (first at {first})",
                         "{center} 的预算在预算表中重复（首次在 {first}）"),
    "ramp_header": ('"{text}" is not a plan month (head each Ramp column with its month, YYYY-MM)',
                    '"{text}" 不是计划月份（渐进表每列的表头请写月份 YYYY-MM）'),
    "budget_whole_plan": ("the whole plan", "整个计划"),
    "over_budget": (("{center}: {months} plan month(s) over the monthly budget of {budget:,.0f} (Budgets), "
                     "{overrun:,.0f} over in all"),
                    "{center}：{months} 个计划月超出月预算 {budget:,.0f}（见预算表），共超出 {overrun:,.0f}"),
    "scenario_unknown_task": ('task_id: "{task}" is not a task on the Tasks sheet (leave it blank for every task)',
                              'task_id："{task}" 不在任务表中（留空表示所有任务）'),
    "scenario_duplicate": ("{driver} for {task} is on the Scenarios sheet twice (first at {first})",
                           "{driver}（{task}）在情景表中重复（首次在 {first}）"),
    "scenario_buffer_per_task": ("buffer: the hidden-cost buffer is one rate for the plan; leave task_id blank",
                                 "buffer：隐性成本缓冲是整个计划的一个比率；task_id 请留空"),
    "scenario_all_tasks": ("every task", "所有任务"),
    "unknown_gpu": ('gpu: "{gpu}" is not in the catalog (use one of {names}, or add it to the GPUs sheet)',
                    'gpu："{gpu}" 不在目录中（请使用 {names} 之一，或在 GPUs（GPU）工作表中添加）'),
    "plan_past_last_month": (
        ("period_start {start} with {months} period_months runs past {last}, the last month a workbook can show: "
         "start by {latest}"),
        "period_start {start} 加 {months} 个月的计划期超过了工作簿能显示的最后月份 {last}：请不晚于 {latest} 开始"),
    "month_outside_plan": (
        ("{column}: {month} is outside the plan {first} to {last} "
         "(change the month or the period_start/period_months settings)"),
        "{column}：{month} 不在计划期 {first} 至 {last} 内（请修改月份或 period_start/period_months 设置）"),
    "end_before_start": ("end_month: {end} is before start_month {start}", "end_month：{end} 早于 start_month {start}"),
    "wildcards": (
        ('{column}: "{value}" contains {chars}, which spreadsheet lookups read as wildcards: '
         "use letters, digits, spaces, - _ . / instead"),
        '{column}："{value}" 含有 {chars}，电子表格查找会将其视为通配符：请改用字母、数字、空格、- _ . /'),
    "error_value": ('"{raw}" is a spreadsheet error, not a value: fix the formula or type the value',
                    '"{raw}" 是电子表格错误值，不是数据：请修正公式或直接输入值'),
    "near_sheet_name": (('sheet "{title}" is not read: budgetgen reads a sheet named "{sheet}"; rename it (or, if it '
                        'is a note of your own, give it a name further from "{sheet}")'),
                        '工作表 "{title}" 不会被读取：budgetgen 读取名为 "{sheet}" 的工作表；请重命名（若是自己的备注，请起一个与 "{sheet}" 差别更大的名字）'),
    "duplicate_assignment": (('resource_id: "{resource}" is already assigned in {first}: a resource serves one task, '
                             'keep one row'),
                             'resource_id："{resource}" 已在 {first} 分配：一个资源只对应一个任务，请只保留一行'),
    "active_above_total": (("active_params_b: {active:g} is more than the model's {total:g} billion parameters in all; "
                           "active parameters are a part of the total"),
                           "active_params_b：{active:g} 超过模型总参数 {total:g} 十亿；激活参数是总参数的一部分"),
    "prompt_beyond_context": (("prompt_tokens: {prompt:,.0f} is beyond {model}'s context of {context:,} tokens; "
                              "shorten the prompt or choose a model with a longer context"),
                              "prompt_tokens：{prompt:,.0f} 超出 {model} 的上下文长度 {context:,} 个token；请缩短提示或选择上下文更长的模型"),
    "duplicate_task_id": ('task_id: "{task_id}" is already used in {first} (task ids must be unique, ignoring case)',
                          'task_id："{task_id}" 已在 {first} 使用（任务编号必须唯一，不区分大小写）'),
    "no_tasks": ("no tasks: fill in at least one row under the header", "没有任务：请在表头下至少填写一行"),
    # the engine
    "excluded_cards": ("does not fit: needs {cards_min} cards ({vram:,.1f} GB), cards is {given}",
                       "放不下：需要 {cards_min} 张卡（{vram:,.1f} GB），cards 为 {given}"),
    "excluded_max_cards": ("does not fit within max_cards: needs {cards_min} x {gpu}, max_cards is {max_cards}",
                           "超出 max_cards：需要 {cards_min} × {gpu}，max_cards 为 {max_cards}"),
    "excluded_no_price": ("no {tier!t} price", "没有{tier!t}价格"),
    "excluded_activations": (
        ("does not fit: one card's own activations ({activations:,.1f} GB) fill the {card:,.1f} GB a {gpu} offers, "
         "on any number of cards: lower micro_batch_tokens, checkpoint the activations (activation_checkpointing "
         "yes) or take a larger card"),
        ("放不下：每张卡自身的激活（{activations:,.1f} GB）已占满 {gpu} 可用的 {card:,.1f} GB，卡数再多也不行："
         "请降低 micro_batch_tokens、使用激活检查点（activation_checkpointing 设为 yes）或换更大显存的显卡")),
    "excluded_latency": (
        ("misses the latency targets even one sequence at a time: {ttft:,.0f} ms to the first token, {tpot:,.1f} ms "
         "a token on {gpu}"),
        ("即使一次只处理一个序列也达不到延迟目标：在 {gpu} 上首 token {ttft:,.0f} 毫秒，每 token {tpot:,.1f} 毫秒")),
    "no_gpu_meets_latency": (
        "no GPU meets the latency targets; the fastest {reason}: relax ttft_ms or tpot_ms, or use fp8/int4",
        "没有显卡能达到延迟目标；最快的方案{reason}：请放宽 ttft_ms 或 tpot_ms，或使用 fp8/int4"),
    "excluded_consumer_online": ("a consumer card is not chosen for an online service (consumer_online: allowed lets it)",
                                 "在线服务不选用消费级显卡（consumer_online 设为 allowed 可允许）"),
    "too_many_cards": ("gpu: needs {cards_min} x {gpu}, max_cards is {max_cards}: set cards or raise max_cards",
                       "gpu：需要 {cards_min} × {gpu}，max_cards 为 {max_cards}：请设置 cards 或提高 max_cards"),
    "cards_do_not_fit": ("cards: {reason}: raise cards or leave it blank", "cards：{reason}：请增加 cards 或留空"),
    "gpu_no_price": ("tier: {gpu} has no {tier!t} price (enter one on the GPUs sheet or choose another tier)",
                     "tier：{gpu} 没有{tier!t}价格（请在 GPUs（GPU）工作表中填写，或选择其他计费方式）"),
    "no_fitting_price": (
        ("tier: no GPU that fits has a price on {tier!t} (fits: {fits}; "
         "enter a price on the GPUs sheet or choose another tier)"),
        "tier：能放下的 GPU 都没有{tier!t}价格（可放下：{fits}；请在 GPUs（GPU）工作表中填写价格，或选择其他计费方式）"),
    "fits_no_gpu": (
        ("model_params_b: needs {need:,.1f} GB of GPU memory, more than {max_cards} x the largest card "
         "({gpu}, {vram:g} GB): use lora/qlora or int8/int4, or raise max_cards"),
        ("model_params_b：需要 {need:,.1f} GB 显存，超过 {max_cards} 张最大显卡（{gpu}，{vram:g} GB）的总和："
         "请使用 lora/qlora 或 int8/int4，或提高 max_cards")),
    # bill and usage files (recon/): a value's problem is prefixed by its column with "cell_value"; numbers
    # also use not_a_number, not_finite, too_large and too_small above
    "file_missing_column": (
        'has no "{column}" column: add it (headers match ignoring case, spaces and underscores)',
        '缺少 "{column}" 列：请添加（表头匹配时不区分大小写、空格和下划线）'),
    "usage_value_unit": (('"{raw}" has a unit that is not a memory unit or does not say 1000s or 1024s: write '
                          'B, KB, MB, GB, KiB, MiB or GiB'),
                         '"{raw}" 的单位不是显存单位，或未说明按1000还是1024计：请写 B、KB、MB、GB、KiB、MiB 或 GiB'),
    "usage_percent_unit": ('"{raw}" is not a percentage: write a number from 0 to 100, optionally with %',
                           '"{raw}" 不是百分比：请写 0 到 100 之间的数字，可带 %'),
    "usage_missing_time": ('has no month or timestamp column: add "month" (monthly rows) or "timestamp" (samples)',
                           '缺少月份或时间戳列：请添加 "month"（按月的行）或 "timestamp"（采样）'),
    "example_plain": ("a plain number such as 12.5, no currency sign or separators",
                      "请写普通数字，例如 12.5，不带货币符号或分隔符"),
    "not_a_timestamp": ('"{raw}" is not a date (write e.g. 2026-07-01 or 2026-07-01T10:00:00Z)',
                        '"{raw}" 不是日期（请写成例如 2026-07-01 或 2026-07-01T10:00:00Z）'),
    "date_outside": ('"{raw}" is outside the dates a workbook shows ({first} to {last}): check the year',
                     '"{raw}" 超出工作簿可显示的日期范围（{first} 至 {last}）：请检查年份'),
    "line_empty": ("is empty; every line needs a value here", "为空；每一行都需要填写"),
    "resource_empty": ("is empty; name the resource", "为空；请填写资源编号"),
    "more_lines": ("{count:,} more lines with the same problem from here on", "从此处起还有 {count:,} 行有同样的问题"),
    "not_between": ("{shown} must be between {lo:g} and {hi:g} ({what!n})", "{shown} 必须介于 {lo:g} 和 {hi:g} 之间（{what!n}）"),
    "not_a_file": ("{path} is not a file; check the path", "{path} 不是文件；请检查路径"),
    "not_a_table_file": ('"{file}" is not CSV, Parquet or xlsx; export it as one of these',
                         '"{file}" 不是 CSV、Parquet 或 xlsx 文件；请导出为其中一种格式'),
    "unreadable_file": ("cannot be read ({reason}); save it again as UTF-8 CSV, Parquet or xlsx",
                        "无法读取（{reason}）；请重新保存为 UTF-8 CSV、Parquet 或 xlsx"),
    "tags_not_json": ('"{raw}" is not a JSON object; write tags as {{"task_id": "T01"}}',
                      '"{raw}" 不是 JSON 对象；标签请写成 {{"task_id": "T01"}}'),
    "currency_mismatch": (
        ('BillingCurrency: "{code}" on {lines:,} lines but the plan is in {plan}, and no exchange rate converts it '
         "for {months}: give its rate on the FX sheet ({plan} per 1 {code}, with its as_of date), or export the bill "
         "in {plan}"),
        ('BillingCurrency："{code}" 共 {lines:,} 行，但计划币种为 {plan}，且 {months} 没有可用的汇率换算：请在 FX 表填写其汇率'
         '（每 1 {code} 折合多少 {plan}，并注明 as_of 日期），或以 {plan} 导出账单')),
    "bad_gpu_pattern": ('gpu_line_pattern: "{pattern}" is not a regular expression ({reason}); fix it',
                        'gpu_line_pattern："{pattern}" 不是正则表达式（{reason}）；请修改'),
    "same_bill_twice": ("{file} is the same bill as {first} (same path or same content): give each bill once",
                        "{file} 与 {first} 是同一份账单（路径或内容相同）：每份账单只需给一次"),
    "no_bill_files": ("{path} holds no CSV, Parquet or xlsx file; check the folder or pattern",
                      "{path} 中没有 CSV、Parquet 或 xlsx 文件；请检查文件夹或通配符"),
    "unknown_timezone": (('billing_timezone: "{zone}" is not a time zone; write an IANA name such as UTC or '
                         "America/New_York"),
                         'billing_timezone："{zone}" 不是时区；请写 IANA 名称，例如 UTC 或 Asia/Shanghai'),
    "file_duplicate_column": (('has the column "{column}" {count} times ({headers}): keep one, so no value is '
                              'read from the wrong one'),
                              '"{column}" 列出现了 {count} 次（{headers}）：只保留一列，以免读错数值'),
    "column_wrong_type": ('column "{header}" holds {kind} values, not {what}: export it as {what}',
                          '"{header}" 列的值是 {kind} 类型，不是{what}：请按{what}导出'),
    "not_utf8_text": ("is not UTF-8 text ({reason}); save it as CSV UTF-8",
                      "不是 UTF-8 文本（{reason}）；请另存为 CSV UTF-8"),
    "csv_bad_row": (("has {found} fields where the header has {expected} (an unquoted comma or a missing field); "
                    "quote the text that holds a comma, or export the bill again"),
                    "有 {found} 个字段，而表头有 {expected} 个（未加引号的逗号或缺字段）；请给含逗号的文本加引号，或重新导出账单"),
    "hidden_sheet": (("is a hidden sheet of the bill: unhide it if its lines belong to the bill, else delete it "
                     "(a hidden copy would be counted twice)"),
                     "是账单中的隐藏工作表：若其行属于账单请取消隐藏，否则删除（隐藏的副本会被重复计算）"),
    "formula_no_value": (("holds a formula without a saved result: open the file in Excel or LibreOffice and save it "
                         "again, so its value can be read"),
                         "含有没有保存结果的公式：请用 Excel 或 LibreOffice 打开并重新保存，以便读取其值"),
    "spreadsheet_error": ('{column}: "{raw}" is a spreadsheet error, not a value: fix the formula or type the value',
                          '{column}："{raw}" 是电子表格错误值，不是数据：请修正公式或直接输入值'),
    "tags_two_tasks": ('"{raw}" names more than one task ({tasks}); keep one task_id key',
                       '"{raw}" 指定了多个任务（{tasks}）；只保留一个 task_id 键'),
    "bill_months_outside_plan": (("the bills hold months outside the plan {first} to {last}: {months}; they are "
                                  "reconciled against no planned cost (check the bills' dates or the plan period)"),
                                 "账单含有计划期 {first} 至 {last} 之外的月份：{months}；这些月份没有计划成本可对账（请检查账单日期或计划期）"),
    "bill_without_lines": ("{file} has the bill's columns but no line: nothing of it is reconciled",
                           "{file} 有账单的列但没有任何行：其中没有可对账的内容"),
    "bill_without_currency": (("{file} has no BillingCurrency column: its amounts are taken to be in the plan's "
                              "currency {currency}; add the column to have it checked"),
                              "{file} 没有 BillingCurrency 列：其金额按计划货币 {currency} 计；请添加该列以便核对"),
    "memory_limit_small": (('recon_memory_limit: "{limit}" is below the {least} DuckDB needs to read a bill; write '
                           'e.g. 1GB'),
                           'recon_memory_limit："{limit}" 低于 DuckDB 读取账单所需的 {least}；请写例如 1GB'),
    "bad_memory_limit": ('recon_memory_limit: "{limit}" is not an amount of memory; write e.g. 1GB or 512MB',
                         'recon_memory_limit："{limit}" 不是内存大小；请写例如 1GB 或 512MB'),
    "bills_out_of_memory": (("the bills need more memory than recon_memory_limit allows ({reason}); raise the "
                            "setting or free disk space for spilling"),
                            "账单所需内存超过 recon_memory_limit（{reason}）；请调高该设置或腾出磁盘空间用于溢写"),
    # bad input, round four (issue 34)
    "percent_ambiguous": (
        ("{shown} would be {value:,.0%}: write {value:g}% (or {share:g}) for {value:g} percent; a share above 100% "
         "is typed with its % sign"),
        "{shown} 将被读作 {value:,.0%}：表示 {value:g}% 请写 {value:g}%（或 {share:g}）；超过 100% 的比例请带 % 号输入"),
    "ramp_month_twice": ('"{text}" is the month {month} again (its column is {first}): keep one column a month',
                         '"{text}" 与 {first} 列是同一月份 {month}：每个月份只保留一列'),
    "scenario_buffer_rate": (("{level}: {value:g} is a hidden-cost buffer of {value:,.0%}: the buffer's values are "
                              "rates (25% or 0.25)"),
                             "{level}：{value:g} 意味着 {value:,.0%} 的隐性成本缓冲：缓冲的取值是比率（25% 或 0.25）"),
    "scenario_order": (("{upper}: {b:g} is below {lower} {a:g}: the values go low <= base <= high (swap them, or "
                        "leave a level blank for the base)"),
                       "{upper}：{b:g} 小于 {lower} {a:g}：取值须满足 low <= base <= high（请对调，或留空以使用 base）"),
    "growth_too_large": (("growth_per_month: {growth:.0%} a month from {start} makes the demand of {month} "
                          "{factor:,.3g} times the demand typed, more than {bound:,.0f}: check the rate (5% a month is 5% or 0.05)"),
                         ("growth_per_month：每月 {growth:.0%} 从 {start} 起使 {month} 的需求达到所填需求的 {factor:,.3g} 倍，"
                         "超过 {bound:,.0f}：请检查增长率（每月 5% 写作 5% 或 0.05）")),
    "offer_filter_empty": (('{setting}: "{raw}" names no {what}: give names separated by commas, or leave it blank '
                            "for every {what}"),
                           '{setting}："{raw}" 没有给出任何{what}：请用逗号分隔填写名称，或留空表示全部'),
    "offer_filter_unknown": ('{setting}: "{name}" is no {what} of the built-in offers ({hint})',
                             '{setting}："{name}" 不是内置报价中的{what}（{hint}）'),
    "offer_filter_known": ("they are: {names!l}", "现有：{names!l}"),
    "offer_filter_excludes_all": (("the built-in offers from providers {providers} in regions {regions} hold none a "
                                   "{currency} plan takes under offer_currency {policy}: {hint}"),
                                  ("来自 providers {providers}、regions {regions} 的内置报价中，没有 {currency} 计划在 "
                                  "offer_currency {policy} 下可用的报价：{hint}")),
    "offer_filter_other_currency": (("their offers are in {currencies!l}: set offer_currency to any to take them, "
                                     "converted at the FX rate"),
                                    "它们的报价币种为 {currencies!l}：将 offer_currency 设为 any 可按汇率换算后采用"),
    "offer_filter_widen": ("none of their offers matches both lists: widen them, or leave one blank",
                           "没有报价同时满足两个列表：请放宽列表，或留空其中之一"),
    "setting_cell": ("Settings!{cell}", "Settings!{cell}"),
    "offer_without_price": (('{column}: "{offer}" says whose {price} it is, but the row types no {price}: enter '
                             "that offer's price beside it, or clear the cell"),
                            ('{column}："{offer}" 说明了 {price} 的报价来源，但该行没有填写 {price}：请在同一行填写该报价的价格，'
                            "或清空此单元格")),
    "quote_in_future": ("as_of: {as_of} is after today ({today}): a quote is dated the day it was given",
                        "as_of：{as_of} 晚于今天（{today}）：报价日期应为报价当天"),
    "quote_two_currencies": (("currency: {gpu} from {provider} in {region} is quoted in {currency} here and in {first} "
                              "at {cell}: one offer is priced in one currency; keep the quotes of one"),
                             ("currency：{provider} 在 {region} 的 {gpu} 此处以 {currency} 报价，而 {cell} 以 {first} 报价："
                             "一个报价只能使用一种币种；请只保留其中一种币种的报价")),
    # calibrate
    "run_needs": ("{column}: required for a {kind} run", "{column}：{kind} 运行必填"),
    "run_method": ('method: "{method}" is not a method of {kind} runs (use {allowed!l})',
                   'method："{method}" 不适用于 {kind} 运行（请使用 {allowed!l}）'),
    "run_unknown_model": ('model: "{model}" is not a catalog model (`budgetgen models`)',
                          'model："{model}" 不是目录中的模型（见 `budgetgen models`）'),
    "run_unknown_gpu": ('gpu: "{gpu}" is not a catalog GPU (`budgetgen catalog`)',
                        'gpu："{gpu}" 不是目录中的 GPU（见 `budgetgen catalog`）'),
    "run_unknown_model_in": (('model: "{model}" is neither a catalog model (`budgetgen models`) nor on {input}\'s '
                              "Models sheet"),
                             'model："{model}" 既不是目录中的模型（见 `budgetgen models`），也不在 {input} 的模型表中'),
    "run_unknown_gpu_in": (('gpu: "{gpu}" is neither a catalog GPU (`budgetgen catalog`) nor on {input}\'s GPUs '
                            "sheet"),
                           'gpu："{gpu}" 既不是目录中的 GPU（见 `budgetgen catalog`），也不在 {input} 的 GPU 表中'),
    "run_above_card": (("measured: {value:g} GB is more than all of a {gpu}'s memory ({card:g} GB): a memory run's "
                        "measured is its peak on each card; check gpu, and give the peak of one card, not of all"),
                       ("measured：{value:g} GB 超过一张 {gpu} 的全部显存（{card:g} GB）："
                        "内存运行的实测值是每张卡上的峰值；请检查 gpu，并填写单卡峰值而非所有卡之和")),
    "run_contradicts": (("measured: {value:g} is more than {factor:g} times the {first:g} of the same run at {cell}: "
                         "one of them is mistyped, or the runs differ in a column the file does not give"),
                        ("measured：{value:g} 与 {cell} 相同运行的 {first:g} 相差超过 {factor:g} 倍："
                        "其中一个填错了，或两次运行在文件未给出的列上不同")),
    "no_runs": ("no runs: the file needs a header and at least one measured run",
                "没有运行记录：文件需要表头和至少一条实测运行"),
    "run_not_modelled": (("the engine cannot model this {kind} run ({model} on {cards} x {gpu}: it does not fit, or "
                          "no speed follows); check model, gpu and cards"),
                         ("引擎无法为此 {kind} 运行建模（{model} 在 {cards} 张 {gpu} 上：放不下或无法得出速度）；"
                         "请检查 model、gpu 和 cards")),
    "fit_at_bound": (("measured: the runs on rows {rows} ask {what}'s {figure} to go {side} {bound:g}, where the fit "
                      "stops: no card or setting explains them; check their measured values, cards and method"),
                     ("measured：第 {rows} 行的运行要求 {what} 的 {figure} {side} {bound:g}（拟合在此停止）："
                     "没有任何卡或设置能解释这些数据；请检查实测值、卡数和方法")),
    "bill_sums_repeated": (("repeats the group of row {first} (its month, day and texts): a query result holds each "
                            "group once, so the file was appended twice or two results put together; its amounts "
                            "would count twice"),
                           ("与第 {first} 行是同一分组（月份、日期和文本相同）：查询结果中每个分组只出现一次，"
                           "文件可能被追加了两次或合并了两份结果；其金额会被重复计算")),
    "ramp_all_paused": (("task_id: the Ramp pauses {task} (0) in every month it is active, {first} to {last}: it "
                         "plans nothing; leave a month blank or above 0, or take the task off the Tasks sheet"),
                        ("task_id：渐进表使 {task} 在其全部活动月份（{first} 至 {last}）都暂停（0）：该任务没有任何计划；"
                        "请留空某个月或填大于 0 的值，或从任务表中删除该任务")),
    "as_of_not_a_date": ('as_of: "{raw}" is not a date: write YYYY-MM-DD, or YYYY-MM for prices of a month',
                         'as_of："{raw}" 不是日期：请写 YYYY-MM-DD，按月的价格写 YYYY-MM'),
    "file_too_many_rows": ("has more than {rows:,} filled rows (row {row:,} is one too many): split the file",
                           "填写的行数超过 {rows:,}（第 {row:,} 行已超出）：请拆分文件"),
    "side_above": ("above", "高于"),
    "side_below": ("below", "低于"),
}
assert not set(PROBLEMS) & set(MESSAGES), "a problem and a warning share a template key"
TEMPLATES = {**MESSAGES, **PROBLEMS}
_LIST_SEP = {"en": ", ", "zh": "、"}
_ITEM_SEP = {"en": "; ", "zh": "；"}  # between whole sentences


def tr(text: str, lang: str) -> str:
    """An output text or column name in `lang` (English is the key; an untranslated text stays English)."""
    return TEXT_ZH.get(text, NAMES_ZH.get(text, text)) if lang == "zh" else text


def name(key: str, lang: str) -> str:
    """A column name or setting key as the input sheets show it in `lang`."""
    return NAMES_ZH.get(key, key) if lang == "zh" else key


def word(value: str, lang: str) -> str:
    """An enumeration value in `lang`."""
    return VALUES_ZH.get(value, value) if lang == "zh" else value


def sheet_name(sheet: str, lang: str) -> str:
    """An input sheet's name in `lang`."""
    return SHEETS_ZH.get(sheet, sheet) if lang == "zh" else sheet


_NOTE = {"en": ("Unit: {}.", "One of: {}.", "Default: {}.", "Required.", "Example: {}."),
         "zh": ("单位：{}。", "可选值：{}。", "默认：{}。", "必填。", "示例：{}。")}


def describe(column: Column, lang: str) -> str:
    """A column's header note in `lang`: help text, unit, allowed values, default, whether required, an example."""
    unit, one_of, default, required, example = _NOTE[lang]
    parts = [tr(column.help, lang)]
    if column.unit:
        parts.append(unit.format(tr(column.unit, lang)))
    if column.choices:
        parts.append(one_of.format(", ".join(word(c, lang) for c in column.choices)))
    if column.default is not None:
        parts.append(default.format(word(column.default, lang) if isinstance(column.default, str) else column.default))
    if column.required:
        parts.append(required)
    if column.example:
        parts.append(example.format(word(column.example, lang) if column.choices else tr(column.example, lang)))
    return " ".join(p for p in parts if p)


def _reverse(table: dict[str, str]) -> dict[str, str]:
    return {normalise_header(zh): en for en, zh in table.items()}


_SHEETS_IN = {**_reverse(SHEETS_ZH), **{normalise_header(en): en for en in SHEETS_ZH}}
_NAMES_IN = _reverse(NAMES_ZH)
_VALUES_IN = _reverse(VALUES_ZH)


def canonical_sheet(title: str) -> str:
    """An input sheet's title (English or Chinese) as its English name; other titles as they are."""
    return _SHEETS_IN.get(normalise_header(title), str(title).strip())


def canonical_name(text: _T) -> _T | str:
    """A header or setting key typed in Chinese as its ASCII name; anything else as it is."""
    return _NAMES_IN.get(normalise_header(text), text)


def canonical_value(raw: object) -> object:
    """An enumeration value typed in Chinese as its ASCII value; anything else as it is."""
    return _VALUES_IN.get(normalise_header(raw), raw) if isinstance(raw, str) else raw


class _Formatter(string.Formatter):
    def __init__(self, lang: str):
        self.lang = lang

    def convert_field(self, value, conversion):
        if conversion == "t":
            return word(value, self.lang)
        if conversion == "n":
            return tr(value, self.lang)
        if conversion == "l":
            return _LIST_SEP[self.lang].join(self._item(v) for v in value)
        if conversion == "i":
            return _ITEM_SEP[self.lang].join(self._item(v) for v in value)
        if isinstance(value, Message):
            return value.render(self.lang)
        return super().convert_field(value, conversion)

    def _item(self, value) -> str:
        """A list item: a Message in the language, else an enumeration value's word."""
        return value.render(self.lang) if isinstance(value, Message) else word(value, self.lang)


_T = TypeVar("_T")


class Message(str):
    """A warning or an input problem: its English text, plus the template key and parameters to render it in
    another language."""

    key: str
    params: dict[str, Any]

    def __new__(cls, key: str, **params: Any) -> Self:
        self = super().__new__(cls, _Formatter("en").format(TEMPLATES[key][0], **params))
        self.key, self.params = key, params
        return self

    def render(self, lang: str) -> str:
        """The message in `lang`."""
        return _Formatter(lang).format(TEMPLATES[self.key][LANGS.index(lang)], **self.params)

    def __reduce__(self):  # copy and pickle rebuild from the template, not from the English text
        return (_message, (self.key, self.params))


def _message(key: str, params: dict) -> Message:
    return Message(key, **params)


def say(text: str, lang: str) -> str:
    """A warning, an input problem's message (or any output text) in `lang`."""
    return text.render(lang) if isinstance(text, Message) else tr(text, lang)
