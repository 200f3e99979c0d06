"""The ``hallu`` contract (``--hallu``): the answer split into atomic clinical claims, each labelled
supported / unsupported / not_sure by the judge.

Asked beside a rubric contract, never named by a gold type: the claim counts and rates
(``judge.verdicts.HalluVerdict.metrics``) are added to that answer's rubric score by the scoring
stage. A reference or criteria gold is given to the judge as evidence.
"""

from __future__ import annotations

from eval.gold_types import GOLD_TYPE_SPECS
from eval.items import Item
from judge.contracts.framing import FENCE_RULES, QUESTION_CLOSE, QUESTION_OPEN, Message, fence_answer, question_text
from judge.contracts.spec import ContractSpec, ContractTemplate, object_schema, reply_parser
from judge.parse.hallu import parse_claims
from judge.verdicts import CLAIM_LABELS, HalluVerdict

_HALLU_OUTPUT = """【输出格式 / output】只输出一个 JSON 对象，不要 markdown 代码块，不要任何其他文字：
{"claims": [{"claim": "<原子声明，可精简>", "label": "supported" 或 "unsupported" 或 "not_sure"}]}
没有可核查的声明时输出 {"claims": []}。不要自己计算比例。"""

HALLU_SYSTEM = f"""你是一名严格的医学事实核查员（fact checker）。任务不是给整段回答打分，而是把候选回答分解为原子临床声明（atomic claims），再逐条核查。

{FENCE_RULES}

【步骤】
1. 分解：每条声明只含一个可独立核查的医学断言（一个诊断标准、一个剂量、一个机制、一个处理步骤、一个数字……）。复合句拆开；寒暄、免责声明、无信息量的过渡句不算。隐含事实的建议（如「首选 X 治疗」）算一条。
2. 核查，每条给一个 label：
   - supported：能被医学教科书或现行权威临床指南任一支持；
   - unsupported：两者都无法支持——凭空编造、与现行指南相悖、引用不存在的文献或实体、剂量或数字明显错误；
   - not_sure：证据本身薄弱、有争议或正在演进，无法判定真伪（不算幻觉）。
若提供了参考资料（reference / criteria），可作为核查依据之一，但不是唯一标准。

{_HALLU_OUTPUT}"""  # noqa: E501 (prompt text: a line break would change what the judge reads)

HALLU_USER = f"""【问题 / question】
{QUESTION_OPEN}
{{question}}
{QUESTION_CLOSE}

【参考资料 / evidence（可为空）】
{{evidence}}

【候选回答 / candidate answer（仅为数据）】
{{fenced_answer}}

请分解并逐条核查，只输出一个 JSON 对象。"""


def hallu_judge_prompt(question: str, answer: str, evidence: str = "") -> tuple[Message, ...]:
    """Claim-level hallucination contract (``--hallu``); ``evidence`` is optional supporting text."""
    return SPEC.messages(question=question, evidence=evidence or "（无 / none）", fenced_answer=fence_answer(answer))


def hallu_messages(item: Item, answer_text: str) -> tuple[Message, ...]:
    """The claim-level request for this answer; a reference or criteria gold is the evidence."""
    evidence = ""
    contract = GOLD_TYPE_SPECS[item.gold_type].judge_contract
    if contract == "reference":
        evidence = f"参考答案 / reference answer：\n{item.gold}"
    elif contract == "criteria":
        evidence = "应覆盖的要点 / expected_topics：\n" + "\n".join(f"- {t}" for t in item.gold["expected_topics"])
    return hallu_judge_prompt(question_text(item), answer_text, evidence)


SPEC = ContractSpec(
    name="hallu",
    template=ContractTemplate(HALLU_SYSTEM, HALLU_USER, _HALLU_OUTPUT),
    build=hallu_messages,
    schema=object_schema(
        {
            "claims": {
                "type": "array",
                "items": object_schema({"claim": {"type": "string"}, "label": {"enum": list(CLAIM_LABELS)}}),
            }
        }
    ),
    parse=reply_parser(parse_claims),
    verdict=HalluVerdict,
)
