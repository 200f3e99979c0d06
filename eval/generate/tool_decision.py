"""Tool-decision items (tool invocation awareness), built without a judge or a model, in the
tool-decision loader's format (``eval/loaders/formats/tool_decision.py``).

Every item offers one invented hospital API in the question. A ``call`` item asks for something
only that API can give — one patient's record, a booking, today's beds — so the right answer is a
call; a ``direct`` item asks general medical knowledge in the same area, so the right answer is
prose, and a call costs as much as a missed one (the scorer is symmetric). Five APIs × three
requests of each kind: 15 ``call`` and 15 ``direct`` items, interleaved call, direct, call, …;
``validity: verified`` because the gold follows from how each item is built.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Api(NamedTuple):
    name: str
    title: str
    purpose: str
    parameters: tuple[str, ...]
    call: tuple[str, str, str]  # requests that need the API
    direct: tuple[str, str, str]  # questions answered from knowledge


APIS: tuple[Api, ...] = (
    Api(
        "QueryLabResults",
        "检验结果查询",
        "按患者标识查询其检验项目的结果与参考范围。",
        (
            "patient_id (string，必填)：住院号或门诊号",
            "test_name (string，必填)：检验项目名称，如“血常规”",
            "latest_only (boolean，可选)：只返回最近一次，默认 true",
        ),
        (
            "帮我查一下住院号 Z20931 的患者今天早上抽的血常规，白细胞是多少？",
            "门诊患者 M-55812 上周做的糖化血红蛋白结果是多少？帮我调出来。",
            "请把住院号 Z20877 的患者最近一次的血钾和血钠结果找出来。",
        ),
        (
            "血常规里中性粒细胞比例升高一般提示什么？",
            "糖化血红蛋白反映的是多长时间内的平均血糖水平？",
            "低钾血症常见的临床表现有哪些？",
        ),
    ),
    Api(
        "BookOutpatientSlot",
        "门诊预约挂号",
        "为患者预约指定科室、日期的门诊号源，返回预约号和就诊时段。",
        (
            "patient_id (string，必填)：患者标识",
            "department (string，必填)：科室名称",
            "date (string，必填)：就诊日期，格式 YYYY-MM-DD",
            "period (string，可选)：morning 或 afternoon",
        ),
        (
            "我是患者 P-88213，想约 2025-03-18 上午皮肤科的号。",
            "帮患者 P-10457 挂 2025-03-25 下午的消化内科门诊。",
            "患者 P-30022 需要 2025-04-02 的眼科复诊号，上午下午都可以，帮我约一个。",
        ),
        (
            "胃镜检查前一般需要空腹多长时间？",
            "去医院复诊时通常需要带哪些资料？",
            "反复口腔溃疡超过两周不愈，一般建议去看哪个科？",
        ),
    ),
    Api(
        "CheckOrderInteractions",
        "医嘱药物相互作用核查",
        "读取指定患者当前有效的全部医嘱，返回其中存在相互作用或重复用药的药物组合。",
        ("patient_id (string，必填)：住院号", "include_herbal (boolean，可选)：是否包含中成药，默认 false"),
        (
            "帮我核对一下住院号 Z31005 的患者当前医嘱里的药有没有相互作用冲突。",
            "住院号 Z31266 的患者刚加了一种抗生素，请检查他现在所有医嘱有没有配伍问题，中成药也算上。",
            "请查一下住院号 Z30419 的患者目前的医嘱里有没有重复用药。",
        ),
        (
            "什么是药物相互作用中的“酶诱导”？",
            "为什么老年人同时服用多种药物时更容易出现不良反应？",
            "服药期间为什么常被建议不要喝西柚汁？",
        ),
    ),
    Api(
        "ReserveImagingExam",
        "影像检查预约",
        "为患者预约 CT、MRI 或超声检查，返回检查时间与注意事项。",
        (
            "patient_id (string，必填)：患者标识",
            "exam_type (string，必填)：CT、MRI 或 超声",
            "body_part (string，必填)：检查部位",
            "preferred_date (string，可选)：期望日期，格式 YYYY-MM-DD",
        ),
        (
            "给住院号 Z40218 的患者约一个头颅 MRI 平扫，最好是 2025-03-20。",
            "门诊患者 P-77120 需要做腹部超声，帮我排一个检查时间。",
            "请为住院号 Z40533 的患者预约胸部 CT 增强检查。",
        ),
        (
            "做增强 CT 前为什么要询问有没有碘造影剂过敏史？",
            "腹部超声检查前需要做哪些准备？",
            "幽闭恐惧症的人做磁共振检查时可以怎么缓解紧张？",
        ),
    ),
    Api(
        "QueryBedAvailability",
        "病区床位查询",
        "查询指定病区此刻的空床数量与床位类型。",
        ("ward (string，必填)：病区名称", "bed_type (string，可选)：general、single 或 monitor"),
        (
            "心内科病区现在还有空床吗？急诊有个病人要收进来。",
            "帮我看一下神经内科病区现在还剩几张监护床。",
            "骨科病区此刻有没有空着的单人间？",
        ),
        (
            "长期卧床的患者预防压疮有哪些护理要点？",
            "卧床患者为什么要预防下肢深静脉血栓？",
            "住院期间为什么要按时翻身和早期下床活动？",
        ),
    ),
)

PROMPT = (
    "你可以使用下面这个接口。\n"
    "API 描述：{name}（{title}）：{purpose}\n"
    "参数：{parameters}\n"
    "如果回答用户需要用到这个接口，请只输出一次调用，形如 {name}(参数名=值, …)；如果不需要，请直接用中文回答。\n"
    "用户问题：{request}"
)


def _item(api: Api, action: str, number: int, request: str) -> dict[str, Any]:
    return {
        "id": f"{action}_{number:02d}",
        "kind": "needs_tool" if action == "call" else "no_tool",
        "expected_action": action,
        "question": PROMPT.format(
            name=api.name, title=api.title, purpose=api.purpose, parameters="；".join(api.parameters), request=request
        ),
        "source": f"medpool template: {api.name}",
        "validity": "verified",
    }


def tool_decision_items() -> list[dict[str, Any]]:
    """15 call and 15 direct items, interleaved call, direct, call, …"""
    items, number = [], 0
    for api in APIS:
        for call, direct in zip(api.call, api.direct, strict=True):
            number += 1
            items += [_item(api, "call", number, call), _item(api, "direct", number, direct)]
    return items
