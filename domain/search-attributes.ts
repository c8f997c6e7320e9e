// Custom search attributes the Temporal UI filters leases by. Registered at dev-server start.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const NodeName = defineSearchAttributeKey('NodeName', SearchAttributeType.KEYWORD);
export const NodeUID = defineSearchAttributeKey('NodeUID', SearchAttributeType.KEYWORD);
export const PodUID = defineSearchAttributeKey('PodUID', SearchAttributeType.KEYWORD);
export const PodRef = defineSearchAttributeKey('PodRef', SearchAttributeType.KEYWORD);
export const IfName = defineSearchAttributeKey('IfName', SearchAttributeType.KEYWORD);
export const LeasePhase = defineSearchAttributeKey('LeasePhase', SearchAttributeType.KEYWORD);
export const IPAddresses = defineSearchAttributeKey('IPAddresses', SearchAttributeType.KEYWORD_LIST);

export const ALL_SEARCH_ATTRIBUTES = [NodeName, NodeUID, PodUID, PodRef, IfName, LeasePhase, IPAddresses];

/** `--search-attribute` values for `temporal server start-dev`. */
export const devServerFlags = (): string[] =>
  ALL_SEARCH_ATTRIBUTES.flatMap((key) => [
    '--search-attribute',
    `${key.name}=${key.type === SearchAttributeType.KEYWORD_LIST ? 'KeywordList' : 'Keyword'}`,
  ]);
